//! Reading a GGUF file's header without loading its weights: the metadata `imurun model
//! info` prints, the chat template, and what the embedded back-end needs before it loads.
//!
//! The reader is plain Rust over `std::io`: it reads the key-value metadata and the tensor
//! descriptions (names and shapes, for the parameter count) and never touches tensor data,
//! so it takes milliseconds even for a many-gigabyte file.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// The longest metadata string kept, in bytes. Chat templates are the longest strings a GGUF
/// carries (tens of kilobytes); the bound keeps a corrupt length from allocating gigabytes.
pub const GGUF_STRING_BYTES_MAX: u64 = 16 * 1024 * 1024;

/// The most metadata entries or tensors read. Real files have a few dozen entries and at
/// most tens of thousands of tensors; a corrupt count fails instead of looping for hours.
pub const GGUF_ITEMS_MAX: u64 = 1_000_000;

/// Why a GGUF header could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GgufError {
    /// The file could not be opened or read, or ended inside the header.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a GGUF file this reader understands.
    #[error("{path} is not a GGUF file we can read: {message}")]
    Invalid { path: PathBuf, message: String },
}

/// One metadata value. Arrays keep only their length and element type: the tokenizer's
/// vocabulary and merges are large and nothing here needs their contents.
#[derive(Debug, Clone, PartialEq)]
pub enum GgufValue {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    Bool(bool),
    String(String),
    Array { len: u64 },
}

/// What `imurun model info` prints about a GGUF file, read from its header alone.
#[derive(Debug, Clone, PartialEq)]
pub struct GgufInfo {
    pub path: PathBuf,
    /// `general.architecture`: `llama`, `qwen2`, ...
    pub architecture: String,
    /// `general.name`, when the file has one.
    pub name: Option<String>,
    /// The number of weights, summed over the tensor shapes.
    pub parameter_count: u64,
    /// The quantisation (`general.file_type`) as llama.cpp names it: `Q4_1`, `Q4_K_M`, ...
    pub file_type: String,
    /// `<architecture>.context_length`: the context the model was trained with.
    pub trained_context_length: Option<u64>,
    /// `tokenizer.chat_template`, when the file has one.
    pub chat_template: Option<String>,
    /// `tokenizer.ggml.add_bos_token`, when the file says.
    pub add_bos_token: Option<bool>,
    /// Every scalar and string metadata entry, by key (arrays as their length).
    pub metadata: BTreeMap<String, GgufValue>,
}

impl GgufInfo {
    /// Reads the header of the GGUF file at `path`.
    pub fn read(path: impl AsRef<Path>) -> Result<Self, GgufError> {
        let path = path.as_ref();
        let file = File::open(path).map_err(|source| GgufError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut reader = Reader {
            inner: BufReader::new(file),
            path,
        };
        let (metadata, parameter_count) = reader.header()?;
        let string = |key: &str| match metadata.get(key) {
            Some(GgufValue::String(value)) => Some(value.clone()),
            _ => None,
        };
        let architecture = string("general.architecture").ok_or_else(|| GgufError::Invalid {
            path: path.to_owned(),
            message: "no general.architecture".into(),
        })?;
        let trained_context_length = match metadata.get(&format!("{architecture}.context_length")) {
            Some(GgufValue::Unsigned(value)) => Some(*value),
            Some(GgufValue::Signed(value)) => u64::try_from(*value).ok(),
            _ => None,
        };
        let file_type = match metadata.get("general.file_type") {
            Some(GgufValue::Unsigned(value)) => file_type_name(*value),
            Some(GgufValue::Signed(value)) => file_type_name(u64::try_from(*value).unwrap_or(0)),
            _ => "unknown".into(),
        };
        let add_bos_token = match metadata.get("tokenizer.ggml.add_bos_token") {
            Some(GgufValue::Bool(value)) => Some(*value),
            _ => None,
        };
        Ok(Self {
            path: path.to_owned(),
            name: string("general.name"),
            chat_template: string("tokenizer.chat_template"),
            architecture,
            parameter_count,
            file_type,
            trained_context_length,
            add_bos_token,
            metadata,
        })
    }

    /// The parameter count the way model cards write it: `135M`, `1.5B`.
    pub fn parameter_count_label(&self) -> String {
        #[allow(clippy::cast_precision_loss)] // a label, rounded anyway
        let count = self.parameter_count as f64;
        match self.parameter_count {
            0..1_000_000 => format!("{:.0}K", count / 1e3),
            1_000_000..1_000_000_000 => format!("{:.0}M", count / 1e6),
            _ => format!("{:.1}B", count / 1e9),
        }
    }
}

/// llama.cpp's name for a `general.file_type` (its `llama_ftype` enum, `LLAMA_FTYPE_MOSTLY_`
/// left off).
pub fn file_type_name(file_type: u64) -> String {
    let name = match file_type {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        other => return format!("type {other}"),
    };
    name.to_owned()
}

/// GGUF's value type tags.
const TYPE_U8: u32 = 0;
const TYPE_I8: u32 = 1;
const TYPE_U16: u32 = 2;
const TYPE_I16: u32 = 3;
const TYPE_U32: u32 = 4;
const TYPE_I32: u32 = 5;
const TYPE_F32: u32 = 6;
const TYPE_BOOL: u32 = 7;
const TYPE_STRING: u32 = 8;
const TYPE_ARRAY: u32 = 9;
const TYPE_U64: u32 = 10;
const TYPE_I64: u32 = 11;
const TYPE_F64: u32 = 12;

struct Reader<'p> {
    inner: BufReader<File>,
    path: &'p Path,
}

impl Reader<'_> {
    /// The metadata and the parameter count (the sum of the tensors' element counts).
    fn header(&mut self) -> Result<(BTreeMap<String, GgufValue>, u64), GgufError> {
        let mut magic = [0u8; 4];
        self.bytes(&mut magic)?;
        if &magic != b"GGUF" {
            return Err(self.invalid("it does not start with GGUF"));
        }
        let version = self.u32()?;
        if !(2..=3).contains(&version) {
            return Err(self.invalid(&format!("version {version} (2 and 3 are read)")));
        }
        let tensor_count = self.count("tensors")?;
        let kv_count = self.count("metadata entries")?;
        let mut metadata = BTreeMap::new();
        for _ in 0..kv_count {
            let key = self.string()?;
            let value_type = self.u32()?;
            let value = self.value(value_type)?;
            metadata.insert(key, value);
        }
        let mut parameter_count: u64 = 0;
        for _ in 0..tensor_count {
            self.skip_string()?;
            let dimensions = self.u32()?;
            if dimensions > 8 {
                return Err(self.invalid(&format!("a tensor with {dimensions} dimensions")));
            }
            let mut elements: u64 = 1;
            for _ in 0..dimensions {
                elements = elements.saturating_mul(self.u64()?);
            }
            let _tensor_type = self.u32()?;
            let _offset = self.u64()?;
            parameter_count = parameter_count.saturating_add(elements);
        }
        Ok((metadata, parameter_count))
    }

    fn value(&mut self, value_type: u32) -> Result<GgufValue, GgufError> {
        Ok(match value_type {
            TYPE_U8 => GgufValue::Unsigned(u64::from(self.array::<1>()?[0])),
            TYPE_I8 => GgufValue::Signed(i64::from(i8::from_le_bytes(self.array::<1>()?))),
            TYPE_U16 => GgufValue::Unsigned(u64::from(u16::from_le_bytes(self.array()?))),
            TYPE_I16 => GgufValue::Signed(i64::from(i16::from_le_bytes(self.array()?))),
            TYPE_U32 => GgufValue::Unsigned(u64::from(self.u32()?)),
            TYPE_I32 => GgufValue::Signed(i64::from(i32::from_le_bytes(self.array()?))),
            TYPE_F32 => GgufValue::Float(f64::from(f32::from_le_bytes(self.array()?))),
            TYPE_BOOL => GgufValue::Bool(self.array::<1>()?[0] != 0),
            TYPE_STRING => GgufValue::String(self.string()?),
            TYPE_U64 => GgufValue::Unsigned(self.u64()?),
            TYPE_I64 => GgufValue::Signed(i64::from_le_bytes(self.array()?)),
            TYPE_F64 => GgufValue::Float(f64::from_le_bytes(self.array()?)),
            TYPE_ARRAY => {
                let element_type = self.u32()?;
                let len = self.count("array elements")?;
                self.skip_array(element_type, len)?;
                GgufValue::Array { len }
            }
            other => return Err(self.invalid(&format!("unknown value type {other}"))),
        })
    }

    fn skip_array(&mut self, element_type: u32, len: u64) -> Result<(), GgufError> {
        let width: u64 = match element_type {
            TYPE_U8 | TYPE_I8 | TYPE_BOOL => 1,
            TYPE_U16 | TYPE_I16 => 2,
            TYPE_U32 | TYPE_I32 | TYPE_F32 => 4,
            TYPE_U64 | TYPE_I64 | TYPE_F64 => 8,
            TYPE_STRING => {
                for _ in 0..len {
                    self.skip_string()?;
                }
                return Ok(());
            }
            other => return Err(self.invalid(&format!("an array of type {other}"))),
        };
        self.skip(width.saturating_mul(len))
    }

    fn string(&mut self) -> Result<String, GgufError> {
        let len = self.u64()?;
        if len > GGUF_STRING_BYTES_MAX {
            return Err(self.invalid(&format!("a string of {len} bytes")));
        }
        let mut bytes = vec![0u8; usize::try_from(len).unwrap_or(usize::MAX)];
        self.bytes(&mut bytes)?;
        String::from_utf8(bytes).map_err(|_| self.invalid("a string that is not UTF-8"))
    }

    fn skip_string(&mut self) -> Result<(), GgufError> {
        let len = self.u64()?;
        if len > GGUF_STRING_BYTES_MAX {
            return Err(self.invalid(&format!("a string of {len} bytes")));
        }
        self.skip(len)
    }

    fn skip(&mut self, len: u64) -> Result<(), GgufError> {
        let offset = i64::try_from(len).map_err(|_| self.invalid("a length past the file"))?;
        self.inner
            .seek_relative(offset)
            .map_err(|source| self.read_error(source))
    }

    fn count(&mut self, what: &str) -> Result<u64, GgufError> {
        let count = self.u64()?;
        if count > GGUF_ITEMS_MAX {
            return Err(self.invalid(&format!("{count} {what}")));
        }
        Ok(count)
    }

    fn u32(&mut self) -> Result<u32, GgufError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, GgufError> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], GgufError> {
        let mut bytes = [0u8; N];
        self.bytes(&mut bytes)?;
        Ok(bytes)
    }

    fn bytes(&mut self, buffer: &mut [u8]) -> Result<(), GgufError> {
        self.inner
            .read_exact(buffer)
            .map_err(|source| self.read_error(source))
    }

    fn read_error(&self, source: std::io::Error) -> GgufError {
        GgufError::Read {
            path: self.path.to_owned(),
            source,
        }
    }

    fn invalid(&self, message: &str) -> GgufError {
        GgufError::Invalid {
            path: self.path.to_owned(),
            message: message.to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GGUF v3 header with the given metadata entries (already encoded) and one tensor.
    fn header(entries: &[Vec<u8>], tensor_dims: &[u64]) -> Vec<u8> {
        let mut bytes = b"GGUF".to_vec();
        bytes.extend(3u32.to_le_bytes());
        bytes.extend(1u64.to_le_bytes());
        bytes.extend((entries.len() as u64).to_le_bytes());
        for entry in entries {
            bytes.extend(entry);
        }
        bytes.extend(string("weight"));
        bytes.extend((tensor_dims.len() as u32).to_le_bytes());
        for dim in tensor_dims {
            bytes.extend(dim.to_le_bytes());
        }
        bytes.extend(0u32.to_le_bytes());
        bytes.extend(0u64.to_le_bytes());
        bytes
    }

    fn string(text: &str) -> Vec<u8> {
        let mut bytes = (text.len() as u64).to_le_bytes().to_vec();
        bytes.extend(text.as_bytes());
        bytes
    }

    fn entry(key: &str, value_type: u32, value: &[u8]) -> Vec<u8> {
        let mut bytes = string(key);
        bytes.extend(value_type.to_le_bytes());
        bytes.extend(value);
        bytes
    }

    fn read(bytes: &[u8]) -> Result<GgufInfo, GgufError> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("model.gguf");
        std::fs::write(&path, bytes).unwrap();
        GgufInfo::read(&path)
    }

    #[test]
    fn a_header_gives_architecture_context_template_file_type_and_parameters() {
        let mut tokens = TYPE_STRING.to_le_bytes().to_vec();
        tokens.extend(2u64.to_le_bytes());
        tokens.extend(string("<s>"));
        tokens.extend(string("</s>"));
        let info = read(&header(
            &[
                entry("general.architecture", TYPE_STRING, &string("llama")),
                entry("llama.context_length", TYPE_U32, &8192u32.to_le_bytes()),
                entry("general.file_type", TYPE_U32, &3u32.to_le_bytes()),
                entry("tokenizer.ggml.tokens", TYPE_ARRAY, &tokens),
                entry("tokenizer.ggml.add_bos_token", TYPE_BOOL, &[0]),
                entry("tokenizer.chat_template", TYPE_STRING, &string("{{ x }}")),
            ],
            &[576, 49152],
        ))
        .unwrap();
        assert_eq!(info.architecture, "llama");
        assert_eq!(info.trained_context_length, Some(8192));
        assert_eq!(info.file_type, "Q4_1");
        assert_eq!(info.parameter_count, 576 * 49152);
        assert_eq!(info.parameter_count_label(), "28M");
        assert_eq!(info.chat_template.as_deref(), Some("{{ x }}"));
        assert_eq!(info.add_bos_token, Some(false));
        assert_eq!(
            info.metadata["tokenizer.ggml.tokens"],
            GgufValue::Array { len: 2 }
        );
    }

    #[test]
    fn a_file_that_is_not_gguf_or_ends_early_is_an_error() {
        assert!(matches!(read(b"GGML...."), Err(GgufError::Invalid { .. })));
        assert!(matches!(read(b"GGUF\x03\0"), Err(GgufError::Read { .. })));
        let huge = {
            let mut bytes = b"GGUF".to_vec();
            bytes.extend(3u32.to_le_bytes());
            bytes.extend(0u64.to_le_bytes());
            bytes.extend(u64::MAX.to_le_bytes());
            bytes
        };
        assert!(matches!(read(&huge), Err(GgufError::Invalid { .. })));
    }
}
