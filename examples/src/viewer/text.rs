//! On-screen text: lines of 8×8 bitmap glyphs (the public-domain `font8x8` set) rasterised on
//! the CPU into an RGBA8 image that the composite pass lays over the crowd.

use font8x8::UnicodeFonts;

/// Glyph cell size in pixels (before the overlay's scale).
pub const GLYPH: usize = 8;
/// Pixel rows per text line (the glyph plus two rows of spacing).
pub const LINE: usize = GLYPH + 2;

/// An RGBA8 text image (sRGB-encoded, straight alpha), rows top to bottom.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextImage {
    /// Width in pixels.
    pub width: usize,
    /// Height in pixels.
    pub height: usize,
    /// `width × height × 4` bytes.
    pub pixels: Vec<u8>,
}

/// The glyph of `c`: the basic Latin and Latin-1 sets, `?` for anything else.
pub fn glyph(c: char) -> [u8; 8] {
    font8x8::BASIC_FONTS
        .get(c)
        .or_else(|| font8x8::LATIN_FONTS.get(c))
        .or_else(|| font8x8::BASIC_FONTS.get('?'))
        .unwrap_or([0; 8])
}

/// Text colour (white) and the panel behind it (black, partly transparent).
const INK: [u8; 4] = [255, 255, 255, 255];
const PANEL: [u8; 4] = [0, 0, 0, 170];

/// Lays `lines` out on a panel as wide as the longest line (plus a one-glyph margin), one
/// [`LINE`] per line; `max_width` pixels at most (longer lines are cut).
pub fn render_lines(lines: &[String], max_width: usize) -> TextImage {
    let cols = lines.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let width = ((cols + 2) * GLYPH).min(max_width.max(GLYPH));
    let height = lines.len() * LINE + 4;
    let mut pixels = PANEL.repeat(width * height);
    for (row, line) in lines.iter().enumerate() {
        let y0 = 2 + row * LINE + 1;
        for (col, c) in line.chars().enumerate() {
            let x0 = (col + 1) * GLYPH;
            if x0 + GLYPH > width {
                break;
            }
            for (dy, bits) in glyph(c).iter().enumerate() {
                for dx in 0..GLYPH {
                    // Bit 0 is the leftmost pixel.
                    if bits & (1 << dx) != 0 {
                        let i = ((y0 + dy) * width + x0 + dx) * 4;
                        pixels[i..i + 4].copy_from_slice(&INK);
                    }
                }
            }
        }
    }
    TextImage {
        width,
        height,
        pixels,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// The font's documented 'H' (font8x8's `BASIC_UNICODE[72]`), written out by hand: `#` ink.
    const H: [&str; 8] = [
        "##..##..", "##..##..", "##..##..", "######..", "##..##..", "##..##..", "##..##..",
        "........",
    ];

    #[test]
    fn a_glyph_lands_in_its_cell_with_the_fonts_pixels() {
        let img = render_lines(&["AH".to_string()], 1000);
        assert_eq!((img.width, img.height), (4 * GLYPH, LINE + 4));
        // 'H' is the second glyph: cell x from 2·8, rows from 2 + 1.
        for (dy, row) in H.iter().enumerate() {
            for (dx, ch) in row.chars().enumerate() {
                let i = ((3 + dy) * img.width + 2 * GLYPH + dx) * 4;
                let want = if ch == '#' { INK } else { PANEL };
                assert_eq!(img.pixels[i..i + 4], want, "H at ({dx}, {dy})");
            }
        }
    }

    #[test]
    fn unknown_characters_draw_a_question_mark_and_long_lines_are_cut() {
        assert_eq!(glyph('\u{2603}'), glyph('?'));
        assert_ne!(
            glyph('·'),
            glyph('?'),
            "Latin-1 middle dot (node names) is in the font"
        );
        let img = render_lines(&["x".repeat(100)], 80);
        assert_eq!(img.width, 80);
        assert_eq!(img.pixels.len(), img.width * img.height * 4);
    }
}
