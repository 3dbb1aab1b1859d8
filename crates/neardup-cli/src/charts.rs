//! Charts as SVG and PNG, drawn with `plotters` and nothing from the system: the SVG backend writes text as
//! `<text>` elements; the bitmap backend renders into a buffer with an embedded font (DejaVu Sans Mono, whose
//! licence allows bundling it; `assets/LICENSE-DejaVu.txt`) through `ab_glyph`, and the `png` crate encodes
//! it. No font-kit, fontconfig or FreeType is needed, so the binary draws the same charts on any machine.

use anyhow::{Context, Result, anyhow};
use plotters::coord::Shift;
use plotters::prelude::*;
use std::path::Path;

/// The font every chart's text is drawn with in PNGs.
const FONT: &[u8] = include_bytes!("../assets/DejaVuSansMono.ttf");

/// Chart size in pixels (SVG user units).
pub const SIZE: (u32, u32) = (800, 500);

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Style {
    /// A line through the points, and a circle at each.
    LinePoints,
    /// A line through the points.
    Line,
    /// A circle at each point.
    Points,
    /// A bar from 0 to each point, from x + offset, this wide.
    Bars {
        /// Left edge relative to x.
        offset: f64,
        /// Width.
        width: f64,
    },
}

/// One series of a chart.
#[derive(Clone, Debug)]
pub struct Series {
    /// Its name in the legend.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
    /// How it is drawn.
    pub style: Style,
}

/// A chart: axes, series and vertical markers.
#[derive(Clone, Debug)]
pub struct Chart {
    /// The caption.
    pub title: String,
    /// The x axis' label.
    pub x_label: String,
    /// The y axis' label.
    pub y_label: String,
    /// The x range.
    pub x: (f64, f64),
    /// The y range.
    pub y: (f64, f64),
    /// The series, drawn in order.
    pub series: Vec<Series>,
    /// Vertical lines with labels (a recommended setting, a threshold).
    pub markers: Vec<(f64, String)>,
    /// Where the legend goes: a corner the data leaves empty (an S-curve's upper left).
    pub legend: SeriesLabelPosition,
}

const COLORS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The font is part of the binary: it parses, or the build is broken (checked by the tests).
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing '{}': {e}", chart.title);
    root.fill(&WHITE).map_err(err)?;
    let mut c = ChartBuilder::on(root)
        .caption(&chart.title, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(chart.x.0..chart.x.1, chart.y.0..chart.y.1)
        .map_err(err)?;
    c.configure_mesh()
        .x_desc(&chart.x_label)
        .y_desc(&chart.y_label)
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    for (i, s) in chart.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let legend = |c: RGBColor| {
            move |(x, y): (i32, i32)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled())
        };
        match s.style {
            Style::Line | Style::LinePoints => {
                c.draw_series(LineSeries::new(
                    s.points.iter().copied(),
                    color.stroke_width(2),
                ))
                .map_err(err)?
                .label(&s.name)
                .legend(legend(color));
                if s.style == Style::LinePoints {
                    c.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled())))
                        .map_err(err)?;
                }
            }
            Style::Points => {
                c.draw_series(s.points.iter().map(|&p| Circle::new(p, 4, color.filled())))
                    .map_err(err)?
                    .label(&s.name)
                    .legend(legend(color));
            }
            Style::Bars { offset, width } => {
                c.draw_series(s.points.iter().filter(|p| p.1 > 0.0).map(|&(x, y)| {
                    Rectangle::new([(x + offset, 0.0), (x + offset + width, y)], color.filled())
                }))
                .map_err(err)?
                .label(&s.name)
                .legend(legend(color));
            }
        }
    }
    for (x, label) in &chart.markers {
        let black = BLACK.mix(0.6);
        c.draw_series(LineSeries::new(
            [(*x, chart.y.0), (*x, chart.y.1)],
            black.stroke_width(1),
        ))
        .map_err(err)?
        .label(label)
        .legend(move |(x, y)| PathElement::new([(x, y), (x + 12, y)], black));
    }
    c.configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 13))
        .position(chart.legend.clone())
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart) -> Result<String> {
    register_font();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw(&root, chart)?;
    }
    Ok(out)
}

/// The chart as a PNG image.
pub fn png(chart: &Chart) -> Result<Vec<u8>> {
    register_font();
    let (w, h) = SIZE;
    let mut pixels = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, SIZE).into_drawing_area();
        draw(&root, chart)?;
    }
    let mut out = Vec::new();
    let mut encoder = ::png::Encoder::new(&mut out, w, h);
    encoder.set_color(::png::ColorType::Rgb);
    encoder.set_depth(::png::BitDepth::Eight);
    let mut writer = encoder.write_header().context("encoding a PNG")?;
    writer.write_image_data(&pixels).context("encoding a PNG")?;
    writer.finish().context("encoding a PNG")?;
    Ok(out)
}

/// The files a chart was written to.
pub struct Written {
    /// The SVG document.
    pub svg: String,
    /// The PNG bytes.
    pub png: Vec<u8>,
}

/// Writes `dir/name.svg` and `dir/name.png`.
pub fn write(chart: &Chart, dir: &Path, name: &str) -> Result<Written> {
    let svg = svg(chart)?;
    let png = png(chart)?;
    let svg_path = dir.join(format!("{name}.svg"));
    let png_path = dir.join(format!("{name}.png"));
    std::fs::write(&svg_path, &svg)
        .with_context(|| format!("cannot write {}", svg_path.display()))?;
    std::fs::write(&png_path, &png)
        .with_context(|| format!("cannot write {}", png_path.display()))?;
    Ok(Written { svg, png })
}

/// Writes one chart to FILE, as SVG or PNG by its extension.
pub fn write_file(chart: &Chart, file: &Path) -> Result<()> {
    let ext = file
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let bytes = match ext.as_deref() {
        Some("svg") => svg(chart)?.into_bytes(),
        Some("png") => png(chart)?,
        _ => anyhow::bail!(
            "{}: the chart is written as SVG or PNG: name the file .svg or .png",
            file.display()
        ),
    };
    std::fs::write(file, bytes).with_context(|| format!("cannot write {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_font_parses_and_charts_render() {
        assert!(plotters::style::register_font("test", FontStyle::Normal, FONT).is_ok());
        let chart = Chart {
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            x: (0.0, 1.0),
            y: (0.0, 1.0),
            series: vec![Series {
                name: "s".into(),
                points: vec![(0.2, 0.3), (0.8, 0.9)],
                style: Style::LinePoints,
            }],
            markers: vec![(0.5, "m".into())],
            legend: SeriesLabelPosition::UpperLeft,
        };
        let png = png(&chart).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
        let svg = svg(&chart).unwrap();
        assert_eq!(svg.matches("<circle").count(), 2);
    }
}
