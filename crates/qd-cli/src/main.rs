//! The `qd` command.

mod conformance;

fn main() {
    let _ = conformance::all_cases();
}
