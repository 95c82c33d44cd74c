// `brand` takes a type; `5` is not one. One error, on `5`, in our words; the code using the group
// still type-checks.
fn main() -> collectives::Result<()> {
    let group = collectives::device_group!(Cpu(0), Cpu(1), brand = 5)?;
    println!("{} members", group.size());
    Ok(())
}
