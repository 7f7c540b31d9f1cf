// The user guide: one module per page, each page a Markdown file of `docs/guide/` (so it reads on
// GitHub too) whose every code block is a doctest run on the CPU emulator.
//
// Links between pages and to API items are reference links: each page ends with the targets GitHub
// uses (relative paths), and `links.md`, included before every page here, gives rustdoc's
// intra-doc targets (the first definition of a label wins). `crates/qd-cli/tests/docs.rs` checks
// that every label a page defines is in `links.md` and that the relative targets exist, and that
// each family page's "What's available" table is the one `qd info --guide-tables docs/guide`
// generates from the capability model.
#![doc = include_str!("links.md")]
#![doc = include_str!("../../../../docs/guide/README.md")]

/// One page: the shared link definitions, then the Markdown file.
macro_rules! page {
    ($(#[$attr:meta])* $name:ident, $file:literal) => {
        $(#[$attr])*
        #[doc = include_str!("links.md")]
        #[doc = include_str!(concat!("../../../../docs/guide/", $file))]
        pub mod $name {}
    };
}

page!(getting_started, "getting-started.md");
page!(execution_model, "execution-model.md");
page!(block, "block.md");
page!(grid, "grid.md");
page!(subgroup, "subgroup.md");
page!(atomics, "atomics.md");
page!(nvidia, "nvidia.md");
page!(algorithms, "algorithms.md");
page!(backends, "backends.md");
page!(emulator, "emulator.md");
page!(performance, "performance.md");
page!(coming_from_quadrants, "coming-from-quadrants.md");
