//! Near-miss suggestions: "did you mean `Vulkan`?" for `Vulcan`.

/// The candidate closest to `word` (case-insensitive, a transposition counting as one edit),
/// if it is within a third of the word's length (at least one edit).
pub fn closest<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    let word = word.to_ascii_lowercase();
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .iter()
        .map(|&c| (distance(&word, &c.to_ascii_lowercase()), c))
        .filter(|&(d, _)| d <= limit)
        .min_by_key(|&(d, _)| d)
        .map(|(_, c)| c)
}

/// Optimal string alignment distance: insertions, deletions, substitutions and adjacent
/// transpositions each cost one.
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1).min(d[i][j - 1] + 1).min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: &[&str] = &["Cpu", "Cuda", "Vulkan"];

    #[test]
    fn near_misses_are_suggested() {
        assert_eq!(closest("Vulcan", KINDS), Some("Vulkan"));
        assert_eq!(closest("cuda", KINDS), Some("Cuda"));
        assert_eq!(closest("CPU", KINDS), Some("Cpu"));
        assert_eq!(closest("Cdua", KINDS), Some("Cuda"));
        assert_eq!(closest("Vlkan", KINDS), Some("Vulkan"));
    }

    #[test]
    fn far_words_are_not() {
        assert_eq!(closest("Metal", KINDS), None);
        assert_eq!(closest("Tpu", &["Vulkan"]), None);
        assert_eq!(closest("x", KINDS), None);
    }

    #[test]
    fn distance_counts_edits() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("ab", "ba"), 1);
        assert_eq!(distance("", "abc"), 3);
    }
}
