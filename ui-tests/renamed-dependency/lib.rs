//! A crate depending on `collectives` under another name, `coll`: a plain `device_group!` call
//! expands to `::coll::...` paths, since the macro reads the name from this crate's Cargo.toml.

/// The size of a group of two virtual CPU devices, opened through the renamed crate.
pub fn group_size() -> coll::Result<usize> {
    let group = coll::device_group!(Cpu(0), Cpu(1))?;
    Ok(group.size())
}

#[cfg(test)]
mod tests {
    #[test]
    fn device_group_finds_the_renamed_crate() {
        assert_eq!(super::group_size().ok(), Some(2));
    }
}
