//! Names of the elementwise and strided-copy kernels of `kernels.cu`, formatted once per
//! process: a launch looks its kernel up by name.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use crate::dtype::DType;

/// An elementwise or strided-copy kernel of `kernels.cu`, by what its name says.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Named {
    /// `binary_<dtype>`.
    Binary(DType),
    /// `scale_<dtype>`.
    Scale(DType),
    /// `cast_<from>_<to>`.
    Cast(DType, DType),
    /// `copy2d_<unit bytes>`.
    Copy2d(u64),
}

impl Named {
    fn format(self) -> String {
        match self {
            Named::Binary(d) => format!("binary_{}", d.name()),
            Named::Scale(d) => format!("scale_{}", d.name()),
            Named::Cast(from, to) => format!("cast_{}_{}", from.name(), to.name()),
            Named::Copy2d(unit) => format!("copy2d_{unit}"),
        }
    }
}

/// The name of kernel `k`, formatted once, on first use, as the reduce's are
/// ([`super::fold::reduce_name`]: formatting it per launch cost a 4 KiB call a tenth of its host time).
pub(super) fn name_of(k: Named) -> Cow<'static, str> {
    static NAMES: OnceLock<HashMap<Named, String>> = OnceLock::new();
    let names = NAMES.get_or_init(|| {
        let ds = DType::ALL;
        let keys = ds.iter().flat_map(|&d| [Named::Binary(d), Named::Scale(d)]);
        let casts = ds.iter().flat_map(|&from| ds.iter().map(move |&to| Named::Cast(from, to)));
        let copies = [1, 2, 4, 8, 16].map(Named::Copy2d);
        keys.chain(casts).chain(copies).map(|k| (k, k.format())).collect()
    });
    match names.get(&k) {
        Some(name) => Cow::Borrowed(name.as_str()),
        None => Cow::Owned(k.format()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_is_formatted_once_and_reads_as_the_kernels_entry_point() {
        assert_eq!(name_of(Named::Binary(DType::BF16)), "binary_bf16");
        assert_eq!(name_of(Named::Scale(DType::U8)), "scale_u8");
        assert_eq!(name_of(Named::Cast(DType::F32, DType::F16)), "cast_f32_f16");
        assert_eq!(name_of(Named::Copy2d(16)), "copy2d_16");
        for d in DType::ALL {
            for k in
                [Named::Binary(d), Named::Scale(d), Named::Cast(d, DType::I64), Named::Cast(DType::U8, d)]
            {
                assert!(matches!(name_of(k), Cow::Borrowed(_)), "{}: formatted once", k.format());
            }
        }
        for unit in [1, 2, 4, 8, 16] {
            assert!(matches!(name_of(Named::Copy2d(unit)), Cow::Borrowed(_)));
        }
    }
}
