//! Compiles the Vulkan backend's WGSL compute shaders to SPIR-V with naga (feature `vulkan` only).
//!
//! Each kernel is assembled from pieces in `shaders/`: the shared helpers, one storage file per
//! dtype (`dtype/*.wgsl`, its names prefixed `$`), one arithmetic file per compute type
//! (`arith/*.wgsl`) and the kernel body. A cast kernel takes two dtype files, prefixed `src_` and
//! `dst_`, the conversion helpers its pair needs (`cast/*.wgsl`) and a one-line `convert` from the
//! table below. The SPIR-V lands in `OUT_DIR`, with `spirv.rs` listing it for `include!`; nothing
//! compiled is committed.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=shaders");
    // Only with the `vulkan` feature (naga is its build-dependency).
    #[cfg(feature = "vulkan")]
    if std::env::var_os("CARGO_FEATURE_VULKAN").is_some() {
        spirv::build();
    }
}

#[cfg(feature = "vulkan")]
mod spirv {
    use std::fmt::Write as _;
    use std::path::{Path, PathBuf};

    /// A dtype's kernel pieces: its name (`dtype/<name>.wgsl`), arithmetic file, the shape of its
    /// 16-byte block in the compute type (`fold/<shape>.wgsl`) and the elements in a block.
    struct Dt {
        name: &'static str,
        arith: &'static str,
        shape: &'static str,
        lanes: u32,
    }

    /// A dtype's kernel pieces, compactly.
    const fn dt(name: &'static str, arith: &'static str, shape: &'static str, lanes: u32) -> Dt {
        Dt { name, arith, shape, lanes }
    }

    /// The dtypes in `DType::ALL` order.
    const DTYPES: [Dt; 7] = [
        dt("f32", "f32", "vec", 4),
        dt("f64", "f64", "vec", 2),
        dt("f16", "f32", "pair", 8),
        dt("bf16", "f32", "pair", 8),
        dt("i32", "i32", "vec", 4),
        dt("i64", "i64", "vec", 2),
        dt("u8", "u8", "quad", 16),
    ];

    /// The fold ops in `BinaryOp` order (Add, Sub, Mul, Div, Max, Min), as `op_*` functions of the
    /// arithmetic files. Each is its own kernel: an op chosen at run time costs a SIMD device
    /// (lavapipe) every branch.
    const OPS: [&str; 6] = ["add", "sub", "mul", "div", "max", "min"];

    /// Compiles the cast kernel `from` → `to`; returns its `include_bytes!` expression.
    fn cast_kernel(out: &Path, shaders: &Path, from: &str, dst: &Dt) -> String {
        let to = dst.name;
        let involves = |t: &str| from == t || to == t;
        let mut src = vec![
            read(shaders, "common.wgsl"),
            prefixed(shaders, &format!("dtype/{from}.wgsl"), "src_"),
            prefixed(shaders, &format!("dtype/{to}.wgsl"), "dst_"),
            read(shaders, "cast/f32.wgsl"),
        ];
        if involves("f64") {
            src.push(read(shaders, "cast/f64.wgsl"));
        }
        if involves("i64") {
            src.push(read(shaders, "cast/i64.wgsl"));
        }
        if involves("f64") && involves("i64") {
            src.push(read(shaders, "cast/f64_i64.wgsl"));
        }
        let expr = convert_expr(from, to);
        src.push(format!("\nfn convert(x: src_C) -> dst_C {{\n    return {expr};\n}}\n"));
        src.push(make_block(dst));
        src.push(read(shaders, "cast.wgsl"));
        compile(out, &format!("cast_{from}_{to}"), &src.concat())
    }

    /// `make_block(e)`: the destination block of converted elements `e..e + lanes`.
    fn make_block(dst: &Dt) -> String {
        let elems: Vec<String> = (0..dst.lanes).map(|l| format!("elem(e + {l}u)")).collect();
        let block = match dst.shape {
            "vec" => format!("dst_B({})", elems.join(", ")),
            _ => {
                let parts: Vec<String> =
                    elems.chunks(4).map(|c| format!("dst_V({})", c.join(", "))).collect();
                format!("dst_B({})", parts.join(", "))
            }
        };
        format!("\nfn make_block(e: u32) -> dst_B {{\n    return {block};\n}}\n")
    }

    /// The fold's `load0`..`load7`: block `w` of input `k`, whose data starts `skew` bytes into its
    /// binding (a view off its memory's alignment; 0 for any other buffer, read as one word).
    fn loaders() -> String {
        let mut out = String::new();
        for k in 0..8 {
            let skew = format!("p.skew[{}u][{}u]", k / 4, k % 4);
            writeln!(
                out,
                "\nfn load{k}(w: u32) -> W {{\n    let s = {skew};\n    if (s == 0u) {{\n        return in{k}[w];\n    }}\n    \
                 let q = w + s / 16u;\n    var next = W();\n    if (q + 1u < arrayLength(&in{k})) {{\n        \
                 next = in{k}[q + 1u];\n    }}\n    return shifted(in{k}[q], next, s % 16u);\n}}"
            )
            .unwrap();
        }
        out
    }

    /// The conversion of one element from `from`'s compute type to `to`'s (see `cast/*.wgsl`).
    fn convert_expr(from: &str, to: &str) -> &'static str {
        // f32, f16 and bf16 all compute in f32 and cast alike.
        let kind = match from {
            "f32" | "f16" | "bf16" => "f",
            other => other,
        };
        match (kind, to) {
            ("f", "f32" | "f16" | "bf16") => "x",
            ("f", "f64") | ("i32" | "u8", "f64") => "f64(x)",
            ("f", "i32") => "f32_to_i32(x)",
            ("f", "i64") => "f32_to_i64(x)",
            ("f", "u8") => "f32_to_u8(x)",
            ("f64", "f32") => "f32(x)",
            ("f64", "f16" | "bf16") => "f64_to_f32_odd(x)",
            ("f64", "i32") => "f64_to_i32(x)",
            ("f64", "i64") => "f64_to_i64(x)",
            ("f64", "u8") => "f64_to_u8(x)",
            ("i32", "f32") => "i32_to_float(x, 24u)",
            ("i32", "f16") => "i32_to_float(x, 11u)",
            ("i32", "bf16") => "i32_to_float(x, 8u)",
            ("i32", "i64") | ("u8", "i64") => "i64(x)",
            ("i32", "u8") => "bitcast<u32>(x) & 0xffu",
            ("i64", "f32") => "i64_to_float(x, 24u)",
            ("i64", "f16") => "i64_to_float(x, 11u)",
            ("i64", "bf16") => "i64_to_float(x, 8u)",
            ("i64", "f64") => "i64_to_f64(x)",
            ("i64", "i32") | ("u8", "i32") => "i32(x)",
            ("i64", "u8") => "u32(x & 0xffli)",
            ("u8", "f32" | "f16" | "bf16") => "f32(x)",
            _ => panic!("no cast {from} -> {to}"),
        }
    }

    fn read(dir: &Path, file: &str) -> String {
        let path = dir.join(file);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display())) + "\n"
    }

    /// A dtype or arithmetic file with its `$` names prefixed.
    fn prefixed(dir: &Path, file: &str, prefix: &str) -> String {
        read(dir, file).replace('$', prefix)
    }

    /// Compiles WGSL `src` to `OUT_DIR/<name>.spv`; returns the `include_bytes!` expression for it.
    /// A shader that does not parse or validate fails the build with naga's message.
    fn compile(out: &Path, name: &str, src: &str) -> String {
        use naga::valid::{Capabilities, ValidationFlags, Validator};
        let module = naga::front::wgsl::parse_str(src)
            .unwrap_or_else(|e| panic!("shader {name}:\n{}", e.emit_to_string(src)));
        let caps = Capabilities::IMMEDIATES | Capabilities::FLOAT64 | Capabilities::SHADER_INT64;
        let info = Validator::new(ValidationFlags::all(), caps)
            .validate(&module)
            .unwrap_or_else(|e| panic!("shader {name}:\n{}", e.emit_to_string(src)));
        let options = naga::back::spv::Options {
            lang_version: (1, 3),
            flags: naga::back::spv::WriterFlags::empty(),
            force_loop_bounding: false,
            emit_int_div_checks: false,
            ..Default::default()
        };
        let pipeline = naga::back::spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: "main".into(),
        };
        let words = naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline))
            .unwrap_or_else(|e| panic!("shader {name}: SPIR-V output: {e}"));
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        std::fs::write(out.join(format!("{name}.spv")), bytes).expect("write SPIR-V");
        format!("include_bytes!(concat!(env!(\"OUT_DIR\"), \"/{name}.spv\"))")
    }

    /// Compiles every kernel into `OUT_DIR` and writes `spirv.rs`.
    pub fn build() {
        let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
        let shaders = Path::new("shaders");
        let mut table = String::from("// Generated by build.rs: the SPIR-V of every kernel.\n\n");

        let mut fold = Vec::new();
        for d in &DTYPES {
            let row: Vec<String> = OPS
                .iter()
                .map(|op| {
                    let src = [
                        read(shaders, "common.wgsl"),
                        prefixed(shaders, &format!("dtype/{}.wgsl", d.name), ""),
                        prefixed(shaders, &format!("arith/{}.wgsl", d.arith), ""),
                        read(shaders, &format!("fold/{}.wgsl", d.shape)),
                        format!("fn op(a: V, b: V) -> V {{\n    return op_{op}(a, b);\n}}\n"),
                        read(shaders, "fold.wgsl"),
                        loaders(),
                    ];
                    compile(&out, &format!("fold_{}_{op}", d.name), &src.concat())
                })
                .collect();
            fold.push(format!("[{}]", row.join(", ")));
        }
        writeln!(table, "/// The fold kernel of each dtype and op, in `DType::ALL` and `BinaryOp` order.")
            .unwrap();
        writeln!(table, "pub(super) const FOLD: [[&[u8]; 6]; 7] = [\n    {},\n];\n", fold.join(",\n    "))
            .unwrap();

        let mut cast = Vec::new();
        for from in &DTYPES {
            let row: Vec<String> = DTYPES
                .iter()
                .map(|to| {
                    if from.name == to.name {
                        "&[]".to_string()
                    } else {
                        cast_kernel(&out, shaders, from.name, to)
                    }
                })
                .collect();
            cast.push(format!("[{}]", row.join(", ")));
        }
        writeln!(
            table,
            "/// The cast kernel of each (from, to) pair, in `DType::ALL` order; empty for from == to."
        )
        .unwrap();
        writeln!(table, "pub(super) const CAST: [[&[u8]; 7]; 7] = [\n    {},\n];\n", cast.join(",\n    "))
            .unwrap();

        let copy = [read(shaders, "common.wgsl"), read(shaders, "copy_bytes.wgsl")].concat();
        let copy = compile(&out, "copy_bytes", &copy);
        writeln!(table, "/// The strided byte copy of slice and concat.").unwrap();
        writeln!(table, "pub(super) const COPY_BYTES: &[u8] = {copy};").unwrap();
        std::fs::write(out.join("spirv.rs"), table).expect("write spirv.rs");
    }
}
