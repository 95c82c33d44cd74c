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
    pub size: usize,
    pub count: usize,
    pub time_us: f64,
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

/// Bus bandwidth against size, one line per (op, dtype, algorithm).
pub fn write_svg(path: &Path, rows: &[Row]) -> Result<(), Box<dyn std::error::Error>> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = vec![];
    for r in rows {
        let key = format!("{} {} {}", r.op, r.dtype, r.algorithm);
        let point = ((r.size as f64).log2(), r.busbw_gbps);
        match series.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(point),
            None => series.push((key, vec![point])),
        }
    }
    let xmin = rows.iter().map(|r| (r.size as f64).log2()).fold(f64::INFINITY, f64::min);
    let xmax = rows.iter().map(|r| (r.size as f64).log2()).fold(f64::NEG_INFINITY, f64::max);
    let ymax = rows.iter().map(|r| r.busbw_gbps).fold(0.0, f64::max) * 1.1 + 1e-9;
    let root = SVGBackend::new(path, (900, 540)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("bus bandwidth", ("sans-serif", 22))
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
    for (i, (name, pts)) in series.into_iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2)));
        chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
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
