//! How alike two texts are, without embeddings: each is normalised (case, whitespace and
//! numbers taken out, so a timestamp or a count does not make two answers differ), cut into
//! overlapping runs of words (shingles), and kept as a bounded sketch of their hashes; two
//! sketches compare by the share of shingles they have in common. The drift breaker compares
//! an agent's stops this way.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Words per shingle.
const WIDTH: usize = 4;
/// Most hashes a sketch keeps (the smallest, as a bottom-k sketch): enough to tell "the same"
/// from "different" on a page of text, small enough to store per session.
const KEEP: usize = 256;

/// A text's shingles, as the smallest of their hashes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sketch(pub Vec<u64>);

impl Sketch {
    /// The sketch of `text`.
    pub fn of(text: &str) -> Sketch {
        let words: Vec<String> = normalized_words(text).collect();
        let mut hashes: Vec<u64> = if words.len() < WIDTH {
            // Too short to shingle: the whole text is its one shingle (empty: none).
            if words.is_empty() {
                Vec::new()
            } else {
                vec![hash(&words.join(" "))]
            }
        } else {
            words
                .windows(WIDTH)
                .map(|run| hash(&run.join(" ")))
                .collect()
        };
        hashes.sort_unstable();
        hashes.dedup();
        hashes.truncate(KEEP);
        Sketch(hashes)
    }

    /// The share (0 to 1) of shingles the two have in common, estimated from the sketches:
    /// of the smallest hashes of both together, how many are in each.
    pub fn similarity(&self, other: &Sketch) -> f64 {
        if self.0.is_empty() && other.0.is_empty() {
            return 1.0;
        }
        let mut union: Vec<u64> = self.0.iter().chain(&other.0).copied().collect();
        union.sort_unstable();
        union.dedup();
        union.truncate(KEEP);
        let both = union
            .iter()
            .filter(|h| self.0.binary_search(h).is_ok() && other.0.binary_search(h).is_ok())
            .count();
        both as f64 / union.len() as f64
    }
}

/// The words of `text`, lowercased, each run of digits one `0`.
fn normalized_words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split_whitespace().filter_map(|word| {
        let mut out = String::new();
        let mut in_number = false;
        for c in word.chars().flat_map(char::to_lowercase) {
            if c.is_ascii_digit() {
                if !in_number {
                    out.push('0');
                }
                in_number = true;
            } else {
                in_number = false;
                out.push(c);
            }
        }
        (!out.is_empty()).then_some(out)
    })
}

fn hash(shingle: &str) -> u64 {
    let digest = Sha256::digest(shingle.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_le_bytes(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_whitespace_and_numbers_do_not_make_texts_differ() {
        let a = Sketch::of("Fixed the test in 3 places.\nRan it: 12 passed in 0.41s. STATUS: OK");
        let b = Sketch::of("fixed the   test in 4 places. ran it: 13 passed in 0.52s.  status: ok");
        assert_eq!(a.similarity(&b), 1.0);
    }

    #[test]
    fn different_answers_are_told_apart() {
        let a = Sketch::of("I changed divide to use true division and the tests pass now.");
        let b =
            Sketch::of("The failing test expects a float; I rewrote the parser instead of divide.");
        assert!(a.similarity(&b) < 0.2, "{}", a.similarity(&b));
        // Two thousand distinct words, spelled in letters (digits would all read as `0`).
        let spelled = |mut n: usize| {
            let mut word = String::new();
            while n > 0 {
                word.push((b'a' + (n % 26) as u8) as char);
                n /= 26;
            }
            word
        };
        let long: String = (1..2000usize).map(|i| spelled(i * 7919) + " ").collect();
        let changed = format!("{long} and one more sentence at the end");
        assert!(Sketch::of(&long).similarity(&Sketch::of(&changed)) > 0.9);
        assert!(Sketch::of(&long).0.len() <= KEEP);
    }
}
