//! The PNG of msg/s against partitions, broker and baseline, push and pop+ack.
//!
//! Text is drawn with DejaVu Sans read from the system (Debian's `fonts-dejavu-core`) and
//! handed to plotters' built-in glyph renderer, so no font-config or freetype library is
//! needed at build or run time.

use std::path::Path;

use anyhow::{bail, Context};
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

/// Where Debian's fonts-dejavu-core puts the font.
const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
];

/// One line of the plot.
pub struct Series {
    /// Legend text.
    pub name: String,
    /// (partitions, msg/s), ascending partitions.
    pub points: Vec<(f64, f64)>,
    /// Line colour.
    pub colour: RGBColor,
    /// Dashed look for the baseline: drawn thinner.
    pub thin: bool,
}

/// Draws `series` into a PNG at `path`.
pub fn partitions_png(path: &Path, title: &str, series: &[Series]) -> anyhow::Result<()> {
    load_font()?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let all: Vec<(f64, f64)> = series.iter().flat_map(|s| s.points.clone()).collect();
    if all.is_empty() {
        bail!("no partition scenarios among the results: nothing to plot");
    }
    let x_max = all.iter().map(|p| p.0).fold(1.0, f64::max) * 2.0;
    let y_max = all.iter().map(|p| p.1).fold(1.0, f64::max) * 1.45;

    let root = BitMapBackend::new(path, (1000, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d((0.5f64..x_max).log_scale(), 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_desc("partitions (log scale)")
        .y_desc("messages per second")
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.0}"))
        .light_line_style(RGBColor(238, 238, 238))
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 16))
        .draw()?;
    for s in series {
        let width = if s.thin { 1 } else { 3 };
        let style = s.colour.stroke_width(width);
        let colour = s.colour;
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), style))?
            .label(s.name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], colour.stroke_width(width))
            });
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, colour.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font(("sans-serif", 14))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

fn load_font() -> anyhow::Result<()> {
    let Some(bytes) = FONT_PATHS.iter().find_map(|p| std::fs::read(p).ok()) else {
        bail!(
            "no DejaVu Sans font found ({}): install Debian's fonts-dejavu-core",
            FONT_PATHS.join(", ")
        );
    };
    // plotters keeps registered fonts for the life of the process: leak one copy, once.
    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, bytes)
        .map_err(|_| anyhow::anyhow!("the DejaVu Sans file is not a usable font"))
}
