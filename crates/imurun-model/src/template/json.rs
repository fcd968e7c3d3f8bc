//! The `tojson` filter as Hugging Face defines it for chat templates: Python's
//! `json.dumps(value, ensure_ascii=False, indent=indent, sort_keys=sort_keys)`, so tool
//! schemas print byte for byte as they do in `apply_chat_template` (minijinja's own
//! `tojson` escapes `<`, `>`, `&` and `'` for HTML, which changes the prompt).

use minijinja::value::{Kwargs, ValueKind};
use minijinja::{Error, ErrorKind, Value};

/// How deep `tojson` descends before it refuses: tool schemas nest a handful of levels.
const DEPTH_MAX: usize = 64;

/// `value | tojson`, `value | tojson(indent=4)`, `value | tojson(sort_keys=true)`.
pub(super) fn tojson(value: &Value, kwargs: Kwargs) -> Result<Value, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    // Accepted for compatibility; Hugging Face's default (`False`) is the only behaviour.
    let _ensure_ascii: Option<bool> = kwargs.get("ensure_ascii")?;
    kwargs.assert_all_used()?;
    let mut writer = Writer {
        out: String::new(),
        indent,
        sort_keys: sort_keys.unwrap_or(false),
    };
    writer.value(value, 0)?;
    Ok(Value::from(writer.out))
}

struct Writer {
    out: String,
    indent: Option<usize>,
    sort_keys: bool,
}

impl Writer {
    fn value(&mut self, value: &Value, depth: usize) -> Result<(), Error> {
        if depth > DEPTH_MAX {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "tojson: the value nests too deeply",
            ));
        }
        match value.kind() {
            ValueKind::Undefined | ValueKind::None => self.out.push_str("null"),
            ValueKind::Bool => self
                .out
                .push_str(if value.is_true() { "true" } else { "false" }),
            ValueKind::Number => self.number(value),
            ValueKind::String => self.string(value.as_str().unwrap_or_default()),
            ValueKind::Map => {
                let mut keys: Vec<Value> = value.try_iter()?.collect();
                if self.sort_keys {
                    keys.sort();
                }
                self.out.push('{');
                for (index, key) in keys.iter().enumerate() {
                    self.separator(index, depth + 1);
                    self.string(&key.to_string());
                    self.out.push_str(": ");
                    self.value(&value.get_item(key)?, depth + 1)?;
                }
                self.close(keys.is_empty(), depth, '}');
            }
            ValueKind::Seq | ValueKind::Iterable => {
                let items: Vec<Value> = value.try_iter()?.collect();
                self.out.push('[');
                for (index, item) in items.iter().enumerate() {
                    self.separator(index, depth + 1);
                    self.value(item, depth + 1)?;
                }
                self.close(items.is_empty(), depth, ']');
            }
            _ => self.string(&value.to_string()),
        }
        Ok(())
    }

    /// What goes before item `index` of a container: `, ` between items on one line, or a
    /// newline and the indentation of `depth` when indenting.
    fn separator(&mut self, index: usize, depth: usize) {
        match self.indent {
            Some(width) => {
                if index > 0 {
                    self.out.push(',');
                }
                self.out.push('\n');
                self.out.push_str(&" ".repeat(width * depth));
            }
            None if index > 0 => self.out.push_str(", "),
            None => {}
        }
    }

    fn close(&mut self, empty: bool, depth: usize, bracket: char) {
        if let (Some(width), false) = (self.indent, empty) {
            self.out.push('\n');
            self.out.push_str(&" ".repeat(width * depth));
        }
        self.out.push(bracket);
    }

    /// Numbers as Python prints them: integers plainly, floats with their `.0`.
    fn number(&mut self, value: &Value) {
        if value.is_integer() {
            self.out.push_str(&value.to_string());
            return;
        }
        let Ok(float) = f64::try_from(value.clone()) else {
            self.out.push_str(&value.to_string());
            return;
        };
        self.out.push_str(&python_float(float));
    }

    fn string(&mut self, text: &str) {
        self.out.push('"');
        for character in text.chars() {
            match character {
                '"' => self.out.push_str("\\\""),
                '\\' => self.out.push_str("\\\\"),
                '\n' => self.out.push_str("\\n"),
                '\r' => self.out.push_str("\\r"),
                '\t' => self.out.push_str("\\t"),
                '\u{8}' => self.out.push_str("\\b"),
                '\u{c}' => self.out.push_str("\\f"),
                control if u32::from(control) < 0x20 => {
                    self.out.push_str(&format!("\\u{:04x}", u32::from(control)));
                }
                other => self.out.push(other),
            }
        }
        self.out.push('"');
    }
}

/// Python's `repr(float)`: the shortest digits that round-trip, in exponent form below
/// 1e-4 and from 1e16 on, with `.0` on whole numbers.
fn python_float(float: f64) -> String {
    if float.is_nan() {
        return "NaN".into();
    }
    if float.is_infinite() {
        return if float > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let magnitude = float.abs();
    if magnitude != 0.0 && !(1e-4..1e16).contains(&magnitude) {
        // Rust prints `1e16` and `1.5e-5`; Python `1e+16` and `1.5e-05`.
        let text = format!("{float:e}");
        let Some((mantissa, exponent)) = text.split_once('e') else {
            return text;
        };
        let (sign, digits) = match exponent.strip_prefix('-') {
            Some(digits) => ('-', digits),
            None => ('+', exponent),
        };
        return format!("{mantissa}e{sign}{digits:0>2}");
    }
    let text = format!("{float}");
    if text.contains('.') {
        text
    } else {
        format!("{text}.0")
    }
}

#[cfg(test)]
mod tests {
    use super::python_float;

    #[test]
    fn floats_print_as_python_prints_them() {
        let cases = [
            (1.0, "1.0"),
            (2.5, "2.5"),
            (0.1, "0.1"),
            (-3.0, "-3.0"),
            (0.0, "0.0"),
            (1e16, "1e+16"),
            (1.5e-5, "1.5e-05"),
            (123_456.789, "123456.789"),
        ];
        for (float, expected) in cases {
            assert_eq!(python_float(float), expected, "{float}");
        }
    }
}
