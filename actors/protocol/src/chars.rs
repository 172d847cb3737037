//! Characters that make text read differently from what it is: what the sanitizer strips and
//! the opener refuses share this one list.

/// Invisible formatting characters: the bidi embeddings, overrides, isolates and marks
/// (U+202A..=U+202E, U+2066..=U+2069, LRM/RLM U+200E/U+200F, ALM U+061C), zero-width ones
/// (U+200B..=U+200D, word joiner and invisible operators U+2060..=U+2064, the deprecated format
/// characters U+206A..=U+206F, BOM U+FEFF, Mongolian vowel separator U+180E, combining grapheme
/// joiner U+034F), the soft hyphen U+00AD, the Hangul fillers (U+115F, U+1160, U+3164, U+FFA0,
/// which draw as blank), interlinear annotations U+FFF9..=U+FFFB and the tag characters
/// U+E0000..=U+E007F (invisible ASCII). They make text read differently from what it is, or
/// hide characters in it. Emoji joined with ZWJ show as their parts: the price of seeing what
/// is there.
pub fn is_invisible_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'
            | '\u{1160}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{e0000}'..='\u{e007f}'
    )
}
