//! SVG charts written by hand: a line chart (p90 latency vs clients, one line per slice setting)
//! and a grouped bar chart (% improvement vs % additional CPU, engine vs engine).
//!
//! Why no plotting crate: two chart kinds with axes, ticks, labels and a legend are a couple of
//! hundred lines, and plain SVG opens in any browser and renders on GitHub.

use std::fmt::Write as _;

/// A named series; `None` leaves a gap.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub values: Vec<Option<f64>>,
}

const MIN_W: f64 = 760.0;
const H_PLOT: f64 = 314.0;
const LEFT: f64 = 80.0;
const MIN_RIGHT: f64 = 200.0;
const TOP: f64 = 56.0;
const COLORS: [&str; 8] = [
    "#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#9c755f",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" step (1, 2 or 5 × 10^k) so that `range` spans about `ticks` steps.
fn nice_step(range: f64, ticks: f64) -> f64 {
    let raw = (range / ticks).max(f64::MIN_POSITIVE);
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// A tick label with as many decimals as the step needs.
fn fmt_tick(v: f64, step: f64) -> String {
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    format!("{v:.decimals$}")
}

/// Y axis bounds and ticks covering `values` and zero.
fn y_axis(values: impl Iterator<Item = f64>) -> (f64, f64, Vec<f64>) {
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi - lo < 1e-12 {
        hi = lo + 1.0;
    }
    let step = nice_step(hi - lo, 5.0);
    let lo = (lo / step).floor() * step;
    let hi = (hi / step).ceil() * step;
    let n = ((hi - lo) / step).round() as usize;
    let ticks = (0..=n).map(|i| lo + i as f64 * step).collect();
    (lo, hi, ticks)
}

/// A compact number label.
pub fn fmt_num(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

struct Frame {
    svg: String,
    lo: f64,
    hi: f64,
    w: f64,
    /// Right margin, room for the legend.
    right: f64,
    rotate: bool,
}

impl Frame {
    /// A frame wide enough for `categories`, whose labels are slanted when they would collide.
    fn new(
        title: &str,
        x_label: &str,
        y_label: &str,
        values: impl Iterator<Item = f64>,
        categories: &[String],
        slot: f64,
        legend: &[String],
    ) -> Frame {
        let (lo, hi, ticks) = y_axis(values);
        let n = categories.len().max(1) as f64;
        let longest_legend = legend.iter().map(|l| l.chars().count()).max().unwrap_or(0) as f64;
        let right = (40.0 + 7.0 * longest_legend).max(MIN_RIGHT);
        let w = (LEFT + right + n * slot).max(MIN_W);
        let longest = categories
            .iter()
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0) as f64;
        let rotate = longest * 7.0 > (w - LEFT - right) / n - 6.0;
        let bottom = if rotate {
            40.0 + (longest * 5.2).min(170.0)
        } else {
            70.0
        };
        let h = TOP + H_PLOT + bottom;
        let size = (16.0f64).min((w - 20.0) / (0.62 * title.chars().count().max(1) as f64));
        let mut svg = String::new();
        let _ = write!(
            svg,
            r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="Helvetica, Arial, sans-serif" font-size="12">
<rect width="100%" height="100%" fill="#ffffff"/>
<text x="{tx}" y="26" text-anchor="middle" font-size="{size:.1}" font-weight="bold">{title}</text>
"##,
            tx = w / 2.0,
            title = esc(title)
        );
        let step = if ticks.len() > 1 {
            ticks[1] - ticks[0]
        } else {
            1.0
        };
        for t in &ticks {
            let y = Frame::y_of(lo, hi, *t);
            let _ = writeln!(
                svg,
                r##"<line x1="{LEFT}" y1="{y:.1}" x2="{x2}" y2="{y:.1}" stroke="#e5e5e5"/><text x="{tx}" y="{ty:.1}" text-anchor="end" fill="#444">{label}</text>"##,
                x2 = w - right,
                tx = LEFT - 8.0,
                ty = y + 4.0,
                label = fmt_tick(*t, step)
            );
        }
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{yb}" stroke="#333"/>
<text x="{xl}" y="{yl}" text-anchor="middle" fill="#222">{x_label}</text>
<text transform="translate(20,{ym}) rotate(-90)" text-anchor="middle" fill="#222">{y_label}</text>"##,
            yb = TOP + H_PLOT,
            xl = (LEFT + w - right) / 2.0,
            yl = h - 14.0,
            ym = TOP + H_PLOT / 2.0,
            x_label = esc(x_label),
            y_label = esc(y_label)
        );
        Frame {
            svg,
            lo,
            hi,
            w,
            right,
            rotate,
        }
    }

    fn y_of(lo: f64, hi: f64, v: f64) -> f64 {
        TOP + H_PLOT * (1.0 - (v - lo) / (hi - lo))
    }

    fn y(&self, v: f64) -> f64 {
        Frame::y_of(self.lo, self.hi, v)
    }

    fn x_axis(&mut self, categories: &[String]) -> Vec<f64> {
        let plot = self.w - LEFT - self.right;
        let n = categories.len().max(1) as f64;
        let xs: Vec<f64> = (0..categories.len())
            .map(|i| LEFT + plot * (i as f64 + 0.5) / n)
            .collect();
        let y0 = self.y(0.0f64.clamp(self.lo, self.hi));
        let _ = writeln!(
            self.svg,
            r##"<line x1="{LEFT}" y1="{y0:.1}" x2="{x2}" y2="{y0:.1}" stroke="#333"/>"##,
            x2 = self.w - self.right
        );
        let y = TOP + H_PLOT + 18.0;
        for (x, c) in xs.iter().zip(categories) {
            if self.rotate {
                let _ = writeln!(
                    self.svg,
                    r##"<text transform="translate({x:.1},{y}) rotate(-35)" text-anchor="end" fill="#222">{c}</text>"##,
                    c = esc(c)
                );
            } else {
                let _ = writeln!(
                    self.svg,
                    r##"<text x="{x:.1}" y="{y}" text-anchor="middle" fill="#222">{c}</text>"##,
                    c = esc(c)
                );
            }
        }
        xs
    }

    fn legend(&mut self, names: &[String]) {
        let x = self.w - self.right + 16.0;
        for (i, n) in names.iter().enumerate() {
            let y = TOP + 8.0 + i as f64 * 20.0;
            let _ = writeln!(
                self.svg,
                r##"<rect x="{x}" y="{ry}" width="12" height="12" fill="{c}"/><text x="{tx}" y="{ty}" fill="#222">{n}</text>"##,
                ry = y - 10.0,
                c = COLORS[i % COLORS.len()],
                tx = x + 18.0,
                ty = y,
                n = esc(n)
            );
        }
    }

    fn finish(mut self) -> String {
        self.svg.push_str("</svg>\n");
        self.svg
    }
}

/// A line chart over categorical x values (e.g. client counts).
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    x: &[String],
    series: &[Series],
) -> String {
    let all = series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied());
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    let mut f = Frame::new(title, x_label, y_label, all, x, 90.0, &names);
    let xs = f.x_axis(x);
    for (i, s) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        // Runs of consecutive values are joined; a missing value breaks the line.
        let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
        for (v, x) in s.values.iter().zip(&xs) {
            match v {
                Some(v) => runs.last_mut().expect("a run").push((*x, *v)),
                None => runs.push(Vec::new()),
            }
        }
        for run in runs.iter().filter(|r| r.len() > 1) {
            let path: Vec<String> = run
                .iter()
                .map(|(x, v)| format!("{x:.1},{:.1}", f.y(*v)))
                .collect();
            let _ = writeln!(
                f.svg,
                r##"<polyline points="{}" fill="none" stroke="{c}" stroke-width="2.5"/>"##,
                path.join(" ")
            );
        }
        let pts: Vec<(f64, f64)> = runs.concat();
        for (x, v) in &pts {
            let y = f.y(*v);
            let _ = writeln!(
                f.svg,
                r##"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{c}"><title>{name}: {val}</title></circle><text x="{tx:.1}" y="{ty:.1}" font-size="10" fill="{c}">{val}</text>"##,
                name = esc(&s.name),
                val = fmt_num(*v),
                tx = x + 6.0,
                ty = y - 6.0
            );
        }
    }
    f.legend(&names);
    f.finish()
}

/// A grouped bar chart: one group per category, one bar per series; negative values go down.
pub fn bar_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    categories: &[String],
    series: &[Series],
    unit: &str,
) -> String {
    let all = series
        .iter()
        .flat_map(|s| s.values.iter().flatten().copied());
    let slot = series.len().max(1) as f64 * 26.0 + 24.0;
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    let mut f = Frame::new(title, x_label, y_label, all, categories, slot, &names);
    let xs = f.x_axis(categories);
    let plot = f.w - LEFT - f.right;
    let group = plot / categories.len().max(1) as f64 * 0.8;
    let bw = group / series.len().max(1) as f64;
    let y0 = f.y(0.0f64.clamp(f.lo, f.hi));
    let label = |v: f64| {
        if unit == "%" {
            format!("{v:.0}%")
        } else {
            format!("{}{unit}", fmt_num(v))
        }
    };
    for (i, s) in series.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        for (v, x) in s.values.iter().zip(&xs) {
            let Some(v) = v else { continue };
            let bx = x - group / 2.0 + i as f64 * bw;
            let y = f.y(*v);
            let (top, h) = if y < y0 { (y, y0 - y) } else { (y0, y - y0) };
            let _ = writeln!(
                f.svg,
                r##"<rect x="{bx:.1}" y="{top:.1}" width="{w:.1}" height="{h:.1}" fill="{c}"><title>{name}: {val}</title></rect>"##,
                w = (bw - 2.0).max(1.0),
                name = esc(&s.name),
                val = esc(&label(*v)),
            );
            if bw >= 24.0 {
                let ly = if *v >= 0.0 { top - 4.0 } else { top + h + 12.0 };
                let _ = writeln!(
                    f.svg,
                    r##"<text x="{lx:.1}" y="{ly:.1}" text-anchor="middle" font-size="10" fill="#222">{val}</text>"##,
                    lx = bx + bw / 2.0,
                    val = esc(&label(*v)),
                );
            }
        }
    }
    f.legend(&names);
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_ticks() {
        assert_eq!(nice_step(100.0, 5.0), 20.0);
        assert_eq!(nice_step(7.0, 5.0), 2.0);
        let (lo, hi, ticks) = y_axis([3.0, 97.0].into_iter());
        assert_eq!((lo, hi), (0.0, 100.0));
        assert_eq!(ticks.len(), 6);
        let (lo, _, _) = y_axis([-12.0, 40.0].into_iter());
        assert!(lo <= -12.0);
    }

    #[test]
    fn charts_are_well_formed_svg() {
        let x = vec!["1".to_string(), "2".to_string(), "4".to_string()];
        let s = vec![
            Series {
                name: "none".into(),
                values: vec![Some(10.0), Some(12.0), Some(20.0)],
            },
            Series {
                name: "2 slices <&>".into(),
                values: vec![Some(6.0), None, Some(15.0)],
            },
        ];
        let svg = line_chart("p90 latency", "clients", "ms", &x, &s);
        assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("2 slices &lt;&amp;&gt;"));
        assert_eq!(svg.matches("<polyline").count(), 1, "a gap breaks the line");
        assert_eq!(svg.matches("<circle").count(), 5);
        let b = bar_chart(
            "t",
            "x",
            "%",
            &x,
            &[Series {
                name: "a".into(),
                values: vec![Some(40.0), Some(-5.0), None],
            }],
            "%",
        );
        assert_eq!(
            b.matches("<rect x=").count(),
            2 + 1,
            "two bars and one legend box"
        );
        assert!(b.contains("-5%"));
        assert_eq!(fmt_tick(20.0, 10.0), "20");
        assert_eq!(fmt_tick(0.5, 0.5), "0.5");
        // Balanced tags (rough check).
        assert_eq!(b.matches("<text").count(), b.matches("</text>").count());
    }
}
