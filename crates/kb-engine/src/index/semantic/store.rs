//! The vectors of one model: a row per chunk, each a section of a note, and
//! exact search over them.
//!
//! Rows are kept as 8-bit integers with a scale each (a quarter of the memory
//! of 32-bit floats; the rounding moves a cosine by about a hundredth), and
//! searched by exact integer dot products against the query quantized alike,
//! row after row in memory order (no map is walked per search): at 500,000
//! sections that is milliseconds (`benches/semantic.rs`), and exact search
//! has no index to build, tune or distrust.
//! The store is saved beside the index as one safetensors file: the vectors,
//! their scales, each row's note and line, the hash of the text it embeds
//! (what a later build reuses it by), and the model's id, which must match the
//! model in force or the file is not used.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use rayon::prelude::*;
use safetensors::tensor::{Dtype, SafeTensors, TensorView};

/// Rows searched on one thread; a larger store is split over the cores.
const SERIAL_ROWS: usize = 16_384;

/// Rows one task of a split search scores.
const BLOCK_ROWS: usize = 4_096;

/// One row's place: its note, the section's first line, its text's hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Vault-relative path of the note.
    pub path: Arc<str>,
    /// The section's first line.
    pub line: u32,
    /// The hash of the embedded text (see `chunks`).
    pub hash: u128,
}

/// A note the store has seen: its content hash then, and its rows (none when
/// no model reads its language).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenNote {
    /// The note's content hash when it was embedded.
    pub hash: String,
    /// Its rows, contiguous.
    pub rows: Range<usize>,
}

/// A note the meaning of the query is near: its best section.
#[derive(Debug, Clone, PartialEq)]
pub struct SemanticHit {
    /// Vault-relative path.
    pub path: Arc<str>,
    /// The cosine similarity of its nearest section (−1 to 1).
    pub similarity: f32,
    /// That section's first line.
    pub line: u32,
}

/// The vectors of one model.
#[derive(Debug, Clone, Default)]
pub struct Vectors {
    model: String,
    dimensions: usize,
    rows: Vec<Row>,
    values: Vec<i8>,
    scales: Vec<f32>,
    notes: HashMap<Arc<str>, SeenNote>,
    /// The note rows are being added to.
    current: Option<Arc<str>>,
}

impl Vectors {
    /// An empty store for `model`'s vectors.
    pub fn new(model: &str) -> Vectors {
        Vectors { model: model.to_owned(), ..Vectors::default() }
    }

    /// The model whose vectors these are.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Rows held.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// Whether it holds no row.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Every row's place, in order.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// What the store knows of the note at `path`.
    pub fn note(&self, path: &str) -> Option<&SeenNote> {
        self.notes.get(path)
    }

    /// Notes seen (with rows or without).
    pub fn notes(&self) -> usize {
        self.notes.len()
    }

    /// The rows by the hash of their text (the first of equal texts).
    pub fn by_hash(&self) -> HashMap<u128, usize> {
        let mut map = HashMap::with_capacity(self.rows.len());
        for (i, row) in self.rows.iter().enumerate() {
            map.entry(row.hash).or_insert(i);
        }
        map
    }

    /// Starts the rows of the note at `path`, whose content hash is `hash`
    /// (rows pushed next are its own; none is fine).
    pub fn begin_note(&mut self, path: Arc<str>, hash: String) {
        let at = self.rows.len();
        self.notes.insert(path.clone(), SeenNote { hash, rows: at..at });
        self.current = Some(path);
    }

    fn add_row(&mut self, line: u32, hash: u128) {
        let path = self.current.clone().unwrap_or_else(|| Arc::from(""));
        if let Some(note) = self.notes.get_mut(&path) {
            note.rows.end = self.rows.len() + 1;
        }
        self.rows.push(Row { path, line, hash });
    }

    /// Adds a row of the current note with a unit-length vector (quantized here).
    pub fn push(&mut self, line: u32, hash: u128, vector: &[f32]) {
        if self.dimensions == 0 {
            self.dimensions = vector.len();
        }
        debug_assert_eq!(vector.len(), self.dimensions);
        let (values, scale) = quantize(vector);
        self.values.extend(values);
        self.scales.push(scale);
        self.add_row(line, hash);
    }

    /// Adds row `i` of `other` (the same model's) to the current note, at `line`.
    pub fn push_from(&mut self, other: &Vectors, i: usize, line: u32) {
        if self.dimensions == 0 {
            self.dimensions = other.dimensions;
        }
        let d = other.dimensions;
        self.values.extend_from_slice(&other.values[i * d..(i + 1) * d]);
        self.scales.push(other.scales[i]);
        self.add_row(line, other.rows[i].hash);
    }

    /// The `notes` notes whose best section is nearest to `query` (unit
    /// length), nearest first, among those `keep` allows. The query is
    /// quantized as the rows are, so a row's score is an integer dot product,
    /// scaled once: rows are scored in blocks over the cores, each block with
    /// the widest vector instructions the processor has (`pulp` picks them
    /// at run time; the same loop is plain code elsewhere).
    pub fn search(
        &self,
        query: &[f32],
        notes: usize,
        keep: &(dyn Fn(&str) -> bool + Sync),
    ) -> Vec<SemanticHit> {
        let d = self.dimensions;
        if d == 0 || query.len() != d || notes == 0 || self.rows.is_empty() {
            return Vec::new();
        }
        let (query, query_scale) = quantize(query);
        let arch = pulp::Arch::new();
        let score_block = |(values, (scales, scores)): (&[i8], (&[f32], &mut [f32]))| {
            arch.dispatch(|| {
                for ((row, scale), score) in values.chunks_exact(d).zip(scales).zip(scores.iter_mut()) {
                    let dot: i32 = row.iter().zip(&query).map(|(v, q)| i32::from(*v) * i32::from(*q)).sum();
                    *score = dot as f32 * scale;
                }
            });
        };
        let mut scores = vec![0f32; self.rows.len()];
        if self.rows.len() > SERIAL_ROWS {
            self.values
                .par_chunks(d * BLOCK_ROWS)
                .zip(self.scales.par_chunks(BLOCK_ROWS).zip(scores.par_chunks_mut(BLOCK_ROWS)))
                .for_each(score_block);
        } else {
            score_block((&self.values, (&self.scales, &mut scores)));
        }
        // A note's rows are contiguous: its score is its best row's.
        let mut best: Vec<(f32, usize)> = Vec::with_capacity(self.notes.len());
        for (i, score) in scores.iter().enumerate() {
            let same_note = i > 0 && {
                let (a, b) = (&self.rows[i - 1].path, &self.rows[i].path);
                Arc::ptr_eq(a, b) || a == b
            };
            match best.last_mut() {
                Some(last) if same_note => {
                    if *score > last.0 {
                        *last = (*score, i);
                    }
                }
                _ => best.push((*score, i)),
            }
        }
        let nearer = |a: &(f32, usize), b: &(f32, usize)| {
            b.0.total_cmp(&a.0).then_with(|| self.rows[a.1].path.cmp(&self.rows[b.1].path))
        };
        // `keep` reads the catalog: asked only for the best, as far down as
        // needed. Most searches keep nearly all, so the best few are sorted
        // first and the rest only when too many of those were left out.
        let mut kept = Vec::with_capacity(notes.min(best.len()));
        let mut sorted = 0;
        let mut want = notes.saturating_mul(4).max(64);
        while kept.len() < notes && sorted < best.len() {
            let upto = (sorted + want).min(best.len());
            let rest = &mut best[sorted..];
            if upto - sorted < rest.len() {
                rest.select_nth_unstable_by(upto - sorted - 1, nearer);
            }
            best[sorted..upto].sort_unstable_by(nearer);
            for &(score, at) in &best[sorted..upto] {
                if kept.len() == notes {
                    break;
                }
                let row = &self.rows[at];
                if keep(&row.path) {
                    kept.push(SemanticHit {
                        path: row.path.clone(),
                        similarity: score * query_scale,
                        line: row.line,
                    });
                }
            }
            sorted = upto;
            want = want.saturating_mul(4);
        }
        kept
    }

    /// The store as a safetensors file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut seen: Vec<(&str, &SeenNote)> = self.notes.iter().map(|(p, n)| (&**p, n)).collect();
        seen.sort_by_key(|(_, note)| (note.rows.start, note.rows.end));
        let notes: Vec<(&str, &str, usize, usize)> = seen
            .iter()
            .map(|(path, note)| (*path, note.hash.as_str(), note.rows.start, note.rows.end))
            .collect();
        let mut lines = Vec::with_capacity(self.rows.len() * 4);
        let mut hashes = Vec::with_capacity(self.rows.len() * 16);
        for row in &self.rows {
            lines.extend(row.line.to_le_bytes());
            hashes.extend(row.hash.to_be_bytes());
        }
        let values: Vec<u8> = self.values.iter().map(|v| *v as u8).collect();
        let scales: Vec<u8> = self.scales.iter().flat_map(|s| s.to_le_bytes()).collect();
        let n = self.rows.len();
        let tensors = [
            ("hash", TensorView::new(Dtype::U8, vec![n, 16], &hashes)),
            ("line", TensorView::new(Dtype::U32, vec![n], &lines)),
            ("scale", TensorView::new(Dtype::F32, vec![n], &scales)),
            ("vector", TensorView::new(Dtype::I8, vec![n, self.dimensions], &values)),
        ];
        let tensors: Vec<(&str, TensorView<'_>)> =
            tensors.into_iter().filter_map(|(name, view)| Some((name, view.ok()?))).collect();
        let metadata = HashMap::from([
            ("model".to_owned(), self.model.clone()),
            ("notes".to_owned(), serde_json::to_string(&notes).unwrap_or_default()),
        ]);
        safetensors::serialize(tensors, Some(metadata)).unwrap_or_default()
    }

    /// A store read back, when `bytes` are a store of `model`'s vectors
    /// (anything else, damaged or of another model, is not used).
    pub fn from_bytes(bytes: &[u8], model: &str) -> Option<Vectors> {
        let (_, metadata) = SafeTensors::read_metadata(bytes).ok()?;
        let info = metadata.metadata().as_ref()?;
        if info.get("model").map(String::as_str) != Some(model) {
            return None;
        }
        let seen: Vec<(String, String, usize, usize)> = serde_json::from_str(info.get("notes")?).ok()?;
        let tensors = SafeTensors::deserialize(bytes).ok()?;
        let get = |name: &str, dtype: Dtype| tensors.tensor(name).ok().filter(|t| t.dtype() == dtype);
        let (hash, line, scale, vector) = (
            get("hash", Dtype::U8)?,
            get("line", Dtype::U32)?,
            get("scale", Dtype::F32)?,
            get("vector", Dtype::I8)?,
        );
        let n = line.shape().first().copied()?;
        let dimensions = vector.shape().get(1).copied()?;
        if [hash.shape()[0], scale.shape()[0], vector.shape()[0]] != [n; 3] {
            return None;
        }
        let lines: Vec<u32> =
            line.data().chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let mut store = Vectors {
            model: model.to_owned(),
            dimensions,
            scales: scale
                .data()
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
            values: vector.data().iter().map(|v| *v as i8).collect(),
            ..Vectors::default()
        };
        for (path, note_hash, start, end) in seen {
            if start != store.rows.len() || end < start || end > n {
                return None;
            }
            store.begin_note(Arc::from(path), note_hash);
            for i in start..end {
                let mut h = [0u8; 16];
                h.copy_from_slice(hash.data().get(i * 16..(i + 1) * 16)?);
                store.add_row(*lines.get(i)?, u128::from_be_bytes(h));
            }
        }
        (store.rows.len() == n).then_some(store)
    }
}

/// A vector as 8-bit integers and the scale that turns them back.
fn quantize(vector: &[f32]) -> (Vec<i8>, f32) {
    let max = vector.iter().fold(0f32, |m, v| m.max(v.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    (vector.iter().map(|v| (v / scale).round().clamp(-127.0, 127.0) as i8).collect(), scale)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / norm).collect()
    }

    #[test]
    fn the_nearest_section_ranks_its_note() {
        let mut store = Vectors::new("m");
        store.begin_note(Arc::from("a.md"), "h1".into());
        store.push(1, 1, &unit(&[1.0, 0.0, 0.0]));
        store.push(9, 2, &unit(&[0.0, 1.0, 0.2]));
        store.begin_note(Arc::from("b.md"), "h2".into());
        store.push(1, 3, &unit(&[0.6, 0.8, 0.0]));
        store.begin_note(Arc::from("c.md"), "h3".into());
        let hits = store.search(&unit(&[0.0, 1.0, 0.0]), 5, &|_| true);
        assert_eq!(hits.len(), 2);
        assert_eq!((&*hits[0].path, hits[0].line), ("a.md", 9));
        assert!((hits[0].similarity - 0.98).abs() < 0.02, "{hits:?}");
        assert_eq!(&*hits[1].path, "b.md");
        let kept = store.search(&unit(&[0.0, 1.0, 0.0]), 5, &|p| p != "a.md");
        assert_eq!(kept.len(), 1);
        assert_eq!(store.note("a.md").map(|n| n.rows.clone()), Some(0..2));
        assert_eq!(store.note("c.md").map(|n| n.rows.clone()), Some(3..3));
    }

    #[test]
    fn a_search_that_keeps_few_notes_reads_further_down_and_ranks_as_a_full_sort() {
        // 9,000 notes of 1 to 3 rows (split over the cores), scored
        // against a query; the search must give what sorting every note's
        // best row gives, whatever `keep` leaves out.
        let mut store = Vectors::new("m");
        let mut state = 7u64;
        let mut next = || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        for note in 0..9_000 {
            store.begin_note(Arc::from(format!("n{note}.md")), format!("h{note}"));
            for row in 0..(1 + note % 3) {
                let v: Vec<f32> = (0..16).map(|_| next()).collect();
                store.push(row as u32 + 1, (note * 3 + row) as u128, &unit(&v));
            }
        }
        let query = unit(&(0..16).map(|_| next()).collect::<Vec<_>>());
        for (notes, keep) in [(10, 1usize), (5, 97), (3_000, 1)] {
            let hits = store.search(&query, notes, &|p| p.len() % keep == 0 || p.ends_with("7.md"));
            let every = store.search(&query, usize::MAX, &|_| true);
            let expected: Vec<&SemanticHit> = every
                .iter()
                .filter(|h| h.path.len() % keep == 0 || h.path.ends_with("7.md"))
                .take(notes)
                .collect();
            assert_eq!(hits.iter().collect::<Vec<_>>(), expected, "notes {notes}, keep {keep}");
            assert!(hits.windows(2).all(|w| w[0].similarity >= w[1].similarity));
        }
        assert_eq!(store.search(&query, usize::MAX, &|_| true).len(), 9_000);
    }

    #[test]
    fn a_store_reads_back_only_for_its_model() {
        let mut store = Vectors::new("model-a");
        store.begin_note(Arc::from("笔记/a.md"), "sha256:1".into());
        store.push(3, 7, &unit(&[0.3, -0.4, 0.5]));
        store.begin_note(Arc::from("empty.md"), "sha256:2".into());
        store.begin_note(Arc::from("b.md"), "sha256:3".into());
        store.push(1, u128::MAX, &unit(&[1.0, 2.0, 3.0]));
        let bytes = store.to_bytes();
        let back = Vectors::from_bytes(&bytes, "model-a").expect("reads back");
        assert_eq!(back.rows(), store.rows());
        assert_eq!(back.notes(), 3);
        assert_eq!(back.note("empty.md"), store.note("empty.md"));
        assert_eq!(back.search(&unit(&[1.0, 2.0, 3.0]), 1, &|_| true)[0].path.as_ref(), "b.md");
        assert!(Vectors::from_bytes(&bytes, "model-b").is_none());
        assert!(Vectors::from_bytes(&bytes[..bytes.len() / 2], "model-a").is_none());
        assert!(Vectors::from_bytes(b"junk", "model-a").is_none());
    }
}
