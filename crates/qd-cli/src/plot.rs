//! `qd plot`: the benchmark records of `qd bench --json` and `bench/cub_bench.cu --json` as one
//! SVG per algorithm and dtype (throughput against n, qd beside its anchor) and a markdown table of
//! the ratios. Drawn with plotters' SVG backend and its built-in text metrics: no system fonts.

use crate::bench::Record;
use plotters::prelude::*;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// `--log2n`: `N`, `A,B,C`, `A..B` (inclusive) or `A..B:STEP`, each at most 30.
///
/// ```
/// use qd_cli::plot::parse_sizes;
/// assert_eq!(parse_sizes("16..22:2").unwrap(), [16, 18, 20, 22]);
/// assert_eq!(parse_sizes("10,12").unwrap(), [10, 12]);
/// assert!(parse_sizes("31").is_err());
/// ```
pub fn parse_sizes(s: &str) -> Result<Vec<u32>, String> {
    let num = |t: &str| t.trim().parse::<u32>().map_err(|_| format!("`{s}`: `{t}` is not a number"));
    let sizes: Vec<u32> = if let Some((a, rest)) = s.split_once("..") {
        let (b, step) = match rest.split_once(':') {
            Some((b, step)) => (num(b)?, num(step)?),
            None => (num(rest)?, 1),
        };
        let a = num(a)?;
        if step == 0 || a > b {
            return Err(format!("`{s}`: the range is empty"));
        }
        (a..=b).step_by(step as usize).collect()
    } else {
        s.split(',').map(num).collect::<Result<_, _>>()?
    };
    match sizes.iter().find(|&&l| l > 30) {
        Some(l) => Err(format!("`{s}`: 2^{l} is over 2^30")),
        None => Ok(sizes),
    }
}

/// The JSON records among `text`'s lines (other lines, such as `# device` comments, are skipped).
pub fn read_records(text: &str) -> Vec<Record> {
    text.lines().filter_map(|l| serde_json::from_str(l.trim()).ok()).collect()
}

/// For each `(algo, dtype)`: the records by implementation, sorted by size.
type Groups<'a> = BTreeMap<(String, String), BTreeMap<String, Vec<&'a Record>>>;

fn groups(records: &[Record]) -> Groups<'_> {
    let mut g: Groups = BTreeMap::new();
    for r in records {
        g.entry((r.algo.clone(), r.dtype.clone())).or_default().entry(r.implementation.clone()).or_default().push(r);
    }
    for by_impl in g.values_mut() {
        for v in by_impl.values_mut() {
            v.sort_by_key(|r| r.log2n);
        }
    }
    g
}

/// The markdown table: per algorithm, dtype and size, qd's and the anchor's median time and
/// throughput, and qd's throughput over the anchor's (above 1: qd is faster).
pub fn table(records: &[Record]) -> String {
    let mut out = String::from(
        "| algo | dtype | n | qd ms | qd GB/s | anchor | anchor ms | anchor GB/s | qd / anchor throughput | checks |\n\
         |---|---|---|---|---|---|---|---|---|---|\n",
    );
    for ((algo, dtype), by_impl) in groups(records) {
        let Some(qd) = by_impl.get("qd") else { continue };
        for q in qd {
            let anchor = by_impl
                .iter()
                .filter(|(name, _)| name.as_str() != "qd")
                .find_map(|(_, v)| v.iter().find(|a| a.log2n == q.log2n));
            let (name, ms, gbps, ratio, check) = match anchor {
                Some(a) => (
                    a.implementation.as_str(),
                    format!("{:.4}", a.median_ms),
                    format!("{:.1}", a.gbps),
                    format!("{:.2}", a.median_ms / q.median_ms),
                    format!("{}/{}", q.check, a.check),
                ),
                None => ("-", "-".into(), "-".into(), "-".into(), q.check.clone()),
            };
            let _ = writeln!(
                out,
                "| {algo} | {dtype} | 2^{} | {:.4} | {:.1} | {name} | {ms} | {gbps} | {ratio} | {check} |",
                q.log2n, q.median_ms, q.gbps
            );
        }
    }
    out
}

/// Draws one SVG per algorithm and dtype into `out` (`{algo}_{dtype}.svg`) and writes `table.md`;
/// returns the number of plots.
pub fn write_all(records: &[Record], out: &Path) -> Result<usize, String> {
    let mut count = 0;
    for ((algo, dtype), by_impl) in groups(records) {
        let path = out.join(format!("{algo}_{dtype}.svg"));
        draw(&path, &format!("{algo} {dtype}"), &by_impl).map_err(|e| format!("{}: {e}", path.display()))?;
        count += 1;
    }
    std::fs::write(out.join("table.md"), table(records)).map_err(|e| e.to_string())?;
    Ok(count)
}

fn draw(path: &Path, title: &str, by_impl: &BTreeMap<String, Vec<&Record>>) -> Result<(), Box<dyn std::error::Error>> {
    let all = by_impl.values().flatten();
    let (lo, hi) = all.clone().fold((u32::MAX, 0), |(lo, hi), r| (lo.min(r.log2n), hi.max(r.log2n)));
    let top = all.map(|r| r.gbps).fold(1.0f64, f64::max) * 1.1;
    let device = by_impl.get("qd").and_then(|v| v.first()).map(|r| r.device.clone()).unwrap_or_default();
    let root = SVGBackend::new(path, (720, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{title} on {device}"), ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(lo as f64 - 0.5..hi as f64 + 0.5, 0.0..top)?;
    chart
        .configure_mesh()
        .x_desc("log2 n")
        .y_desc("GB/s (median)")
        .x_labels((hi - lo + 1) as usize)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    let colors = [RED, BLUE, GREEN, MAGENTA];
    for (i, (name, rs)) in by_impl.iter().enumerate() {
        let color = colors[i % colors.len()];
        let points: Vec<(f64, f64)> = rs.iter().map(|r| (r.log2n as f64, r.gbps)).collect();
        chart
            .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2)));
        chart.draw_series(points.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    chart.configure_series_labels().border_style(BLACK).background_style(WHITE.mix(0.8)).draw()?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(algo: &str, imp: &str, log2n: u32, ms: f64) -> Record {
        Record {
            algo: algo.into(),
            dtype: "i32".into(),
            log2n,
            implementation: imp.into(),
            device: "cpu".into(),
            median_ms: ms,
            min_ms: ms,
            gbps: 1.0 / ms,
            gelems: 0.0,
            reps: 3,
            check: "ok".into(),
        }
    }

    #[test]
    fn sizes_parse_and_bad_ones_are_errors() {
        assert_eq!(parse_sizes("26").unwrap(), [26]);
        assert_eq!(parse_sizes("16..18").unwrap(), [16, 17, 18]);
        assert!(parse_sizes("18..16").unwrap_err().contains("empty"));
        assert!(parse_sizes("x").unwrap_err().contains("not a number"));
        assert!(parse_sizes("1..4:0").is_err());
    }

    #[test]
    fn records_make_a_table_and_plots() {
        let text = "# device H100\n".to_string()
            + &[
                rec("scan", "qd", 16, 2.0),
                rec("scan", "cub", 16, 1.0),
                rec("scan", "qd", 18, 4.0),
                rec("reduce", "qd", 16, 1.0),
            ]
            .iter()
            .map(|r| serde_json::to_string(r).unwrap())
            .collect::<Vec<_>>()
            .join("\n");
        let records = read_records(&text);
        assert_eq!(records.len(), 4);
        let t = table(&records);
        assert!(t.contains("| scan | i32 | 2^16 | 2.0000 | 0.5 | cub | 1.0000 | 1.0 | 0.50 | ok/ok |"), "{t}");
        assert!(t.contains("| scan | i32 | 2^18 | 4.0000 | 0.2 | - |"), "{t}");
        let dir = std::env::temp_dir().join(format!("qd-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(write_all(&records, &dir).unwrap(), 2);
        let svg = std::fs::read_to_string(dir.join("scan_i32.svg")).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("scan i32 on cpu") && svg.contains("cub"), "{svg}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
