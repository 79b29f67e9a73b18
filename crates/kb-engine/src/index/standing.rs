//! A page's scores follow its order. Two rules put a note where its own score
//! would not: a question's fused ranking (`fusion`) lifts a note both tools
//! hold above notes that outscore it, and a note holding fewer of the query's
//! words (or lone CJK characters only) comes after every note holding enough,
//! whatever it scores. The contract promises lists sorted by score, and an
//! agent reading `4.1, 9.6, 3.0` cannot tell which note the page prefers; so
//! a lifted note takes the score of the best note it was lifted above, and a
//! note held back takes the score of the last note before it. Its own score
//! stays in its explanation (`own_score`, with why it was placed), so no
//! score on a page is unexplained.

use super::search::SearchHit;

/// Levels the scores of `hits` (in page order; the first `ranked` are the
/// notes holding enough of the query's words, ranked by `fusion` or by score)
/// so they never rise down the page.
pub(super) fn level(hits: &mut [SearchHit], ranked: usize) {
    let ranked = ranked.min(hits.len());
    // Bottom up through the ranked notes: a note placed above a better-scoring
    // one is lifted to that one's score (each such note is one fusion lifted).
    for at in (0..ranked.saturating_sub(1)).rev() {
        let below = hits[at + 1].score;
        if hits[at].score < below {
            replace(&mut hits[at], below, "lifted above notes that outscore it: the other tool ranks it too");
        }
    }
    // Top down through the rest: none scores above the note before it.
    for at in ranked.max(1)..hits.len() {
        let above = hits[at - 1].score;
        if hits[at].score > above {
            replace(&mut hits[at], above, "ranked after notes holding more of the query's words");
        }
    }
}

/// Gives `hit` the score its place on the page says, keeping its own in its
/// explanation (when one was asked for).
fn replace(hit: &mut SearchHit, score: f32, why: &str) {
    if let Some(serde_json::Value::Object(explanation)) = hit.explanation.as_mut() {
        explanation.insert("own_score".into(), ((hit.score * 1000.0).round() / 1000.0).into());
        explanation.insert("placed".into(), why.into());
    }
    hit.score = score;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vault::{NoteKind, NoteRecord};

    fn hit(score: f32) -> SearchHit {
        let record = NoteRecord {
            path: "n.md".into(),
            kind: NoteKind::Note,
            size: 0,
            modified_ns: 0,
            born_ns: None,
            hash: String::new(),
            title: "n".into(),
            aliases: Vec::new(),
            tags: Vec::new(),
            description: String::new(),
            created: None,
            headings: Default::default(),
            links: Default::default(),
            block_ids: Vec::new(),
            body_line: 1,
            diagnostics: Vec::new(),
        };
        SearchHit {
            record,
            score,
            matched: Vec::new(),
            explanation: Some(serde_json::json!({ "terms": [] })),
            weak: false,
        }
    }

    fn levelled(scores: &[f32], ranked: usize) -> (Vec<f32>, Vec<Option<f64>>) {
        let mut hits: Vec<SearchHit> = scores.iter().map(|&score| hit(score)).collect();
        level(&mut hits, ranked);
        let own = hits
            .iter()
            .map(|hit| hit.explanation.as_ref().and_then(|e| e.get("own_score")).and_then(|s| s.as_f64()))
            .collect();
        (hits.iter().map(|hit| hit.score).collect(), own)
    }

    #[test]
    fn a_page_in_score_order_is_left_alone() {
        assert_eq!(levelled(&[9.0, 7.0, 7.0, 1.0], 3), (vec![9.0, 7.0, 7.0, 1.0], vec![None; 4]));
        assert_eq!(levelled(&[], 0), (vec![], vec![]));
    }

    #[test]
    fn a_lifted_note_takes_the_score_of_the_best_note_it_was_lifted_above() {
        // Fusion put the 4.0 note second and the 3.0 note third.
        let (scores, own) = levelled(&[10.0, 4.0, 3.0, 8.0, 6.0], 5);
        assert_eq!(scores, [10.0, 8.0, 8.0, 8.0, 6.0]);
        assert_eq!(own, [None, Some(4.0), Some(3.0), None, None]);
    }

    #[test]
    fn a_note_held_back_never_scores_above_the_note_before_it() {
        let (scores, own) = levelled(&[5.0, 3.0, 6.0, 2.0, 4.0], 2);
        assert_eq!(scores, [5.0, 3.0, 3.0, 2.0, 2.0]);
        assert_eq!(own, [None, None, Some(6.0), None, Some(4.0)]);
        // With no ranked note, the held-back notes keep their order and level down.
        assert_eq!(levelled(&[2.0, 5.0], 0).0, [2.0, 2.0]);
    }

    #[test]
    fn every_page_it_levels_is_in_score_order_with_each_changed_score_explained() {
        let pages: [&[f32]; 4] =
            [&[1.0, 9.0, 2.0, 8.0, 3.0], &[0.5], &[3.0, 3.0, 7.0], &[6.0, 1.0, 9.0, 0.1]];
        for page in pages {
            for ranked in 0..=page.len() {
                let (scores, own) = levelled(page, ranked);
                assert!(scores.windows(2).all(|pair| pair[0] >= pair[1]), "{page:?} {ranked}: {scores:?}");
                for ((score, own), before) in scores.iter().zip(&own).zip(page.iter()) {
                    match own {
                        Some(own) => assert_eq!(*own as f32, *before),
                        None => assert_eq!(score, before),
                    }
                }
            }
        }
    }
}
