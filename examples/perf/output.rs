//! The perf tool's outputs: the nccl-tests table, JSON rows, and an SVG of bus bandwidth.

use std::path::Path;

use collectives::Device;
use plotters::prelude::*;
use serde::Serialize;

/// One measured (op, dtype, algorithm, size).
#[derive(Serialize, Clone, Debug)]
pub struct Row {
    pub op: String,
    pub dtype: String,
    pub redop: String,
    pub algo: String,
    pub algorithm: String,
    pub devices: usize,
    /// Calls in flight at once (`--in-flight`; 0: each realized and waited for).
    pub in_flight: usize,
    pub size: usize,
    pub count: usize,
    /// The median of the timed calls; with calls in flight, their mean.
    pub time_us: f64,
    /// The tenth percentile of the timed calls (none with calls in flight): with `p90_us`, how
    /// far one process's calls spread around the median.
    pub p10_us: Option<f64>,
    /// The ninetieth percentile of the timed calls (none with calls in flight).
    pub p90_us: Option<f64>,
    pub algbw_gbps: f64,
    pub busbw_gbps: f64,
    pub wrong: i64,
    pub memcpy_us: Option<f64>,
    pub floor_us: Option<f64>,
}

pub fn header(floor: bool) {
    let extra = if floor { "      memcpy       floor  x floor" } else { "" };
    println!(
        "#{:>14} {:>12} {:>12} {:>6} {:>10} {:>6} {:>11} {:>8} {:>8} {:>7}{extra}",
        "op", "size", "count", "type", "redop", "algo", "time", "algbw", "busbw", "#wrong"
    );
    let extra = if floor { "        (us)        (us)" } else { "" };
    println!(
        "#{:>14} {:>12} {:>12} {:>6} {:>10} {:>6} {:>11} {:>8} {:>8} {:>7}{extra}",
        "", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", ""
    );
}

/// nccl-tests' footers: the wrong elements over every row, and the mean bus bandwidth.
pub fn footer(rows: &[Row]) {
    let wrong: i64 = rows.iter().map(|r| r.wrong.max(0)).sum();
    println!("# Out of bounds values : {wrong} {}", if wrong == 0 { "OK" } else { "FAILED" });
    let avg = rows.iter().map(|r| r.busbw_gbps).sum::<f64>() / rows.len().max(1) as f64;
    println!("# Avg bus bandwidth    : {avg:.4}");
}

pub fn print(r: &Row) {
    let mut line = format!(
        " {:>14} {:>12} {:>12} {:>6} {:>10} {:>6} {:>11.1} {:>8.2} {:>8.2} {:>7}",
        r.op, r.size, r.count, r.dtype, r.redop, r.algorithm, r.time_us, r.algbw_gbps, r.busbw_gbps, r.wrong
    );
    if let (Some(m), Some(f)) = (r.memcpy_us, r.floor_us) {
        line += &format!(" {m:>11.1} {f:>11.1} {:>8.2}", r.time_us / f);
    } else if let Some(m) = r.memcpy_us {
        line += &format!(" {m:>11.1}");
    }
    println!("{line}");
}

pub fn write_json(path: &Path, command: &str, devices: &[Device], rows: &[Row]) -> std::io::Result<()> {
    let devices: Vec<String> = devices.iter().map(ToString::to_string).collect();
    let doc = serde_json::json!({ "command": command, "devices": devices, "rows": rows });
    std::fs::write(path, serde_json::to_string_pretty(&doc)?)
}

/// Draws bus bandwidth against size as an SVG at `path`: one line per op, dtype and algorithm in
/// distinguishable colours, the memcpy floor (where `--floor` measured it) dashed in the same
/// colour, titled with the devices and dtypes, the legend beside the plot.
pub fn write_svg(path: &Path, devices: &[Device], rows: &[Row]) -> Result<(), Box<dyn std::error::Error>> {
    if rows.is_empty() {
        return Ok(());
    }
    let series = svg_series(rows);
    let xmin = rows.iter().map(|r| (r.size as f64).log2()).fold(f64::INFINITY, f64::min);
    let xmax = rows.iter().map(|r| (r.size as f64).log2()).fold(f64::NEG_INFINITY, f64::max);
    let ymax =
        series.iter().flat_map(|s| s.1.iter().chain(&s.2)).map(|p| p.1).fold(0.0, f64::max) * 1.1 + 1e-9;
    let root = SVGBackend::new(path, (1100, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let (plot, legend) = root.split_horizontally(820);
    let mut dtypes: Vec<&str> = rows.iter().map(|r| r.dtype.as_str()).collect();
    dtypes.dedup();
    let names: Vec<String> = devices.iter().map(ToString::to_string).collect();
    let title = format!("bus bandwidth: [{}], {}", names.join(", "), dtypes.join(", "));
    let mut chart = ChartBuilder::on(&plot)
        .caption(title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(xmin..xmax.max(xmin + 1.0), 0.0..ymax)?;
    chart
        .configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc("busbw (GB/s)")
        .x_label_formatter(&|x| human(2f64.powf(*x) as usize))
        .draw()?;
    for (i, (name, pts, floor)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?;
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))?;
        chart.draw_series(DashedLineSeries::new(floor.clone(), 6, 4, color.stroke_width(1)))?;
        let y = 40 + 22 * i as i32;
        legend.draw(&PathElement::new(vec![(10, y), (34, y)], color.stroke_width(2)))?;
        legend.draw(&Text::new(name.clone(), (40, y - 7), ("sans-serif", 14)))?;
        if !floor.is_empty() {
            let y = y + 11;
            legend.draw(&PathElement::new(vec![(10, y), (34, y)], color.stroke_width(1)))?;
            legend.draw(&Text::new("  its memcpy floor", (40, y - 7), ("sans-serif", 12)))?;
        }
    }
    root.present()?;
    Ok(())
}

/// The SVG's series: name (`op dtype algorithm`), its (log2 size, busbw) points, and the floor's
/// points (the busbw the call would have at the memcpy floor's time), where measured.
type Series = (String, Vec<(f64, f64)>, Vec<(f64, f64)>);

fn svg_series(rows: &[Row]) -> Vec<Series> {
    let mut series: Vec<Series> = vec![];
    for r in rows {
        let key = format!("{} {} {}", r.op, r.dtype, r.algorithm);
        let x = (r.size as f64).log2();
        let floor = r.floor_us.filter(|&f| f > 0.0).map(|f| (x, r.busbw_gbps * r.time_us / f));
        let i = match series.iter().position(|s| s.0 == key) {
            Some(i) => i,
            None => {
                series.push((key, vec![], vec![]));
                series.len() - 1
            }
        };
        series[i].1.push((x, r.busbw_gbps));
        series[i].2.extend(floor);
    }
    series
}

/// `1K`, `16M`, `1G`.
pub fn human(b: usize) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}G", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}
