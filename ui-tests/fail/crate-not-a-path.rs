// `crate` takes the path of the collectives crate; `5` is not a path. One error, on `5`.
fn main() {
    let _group = collectives::device_group!(Cpu(0), crate = 5);
}
