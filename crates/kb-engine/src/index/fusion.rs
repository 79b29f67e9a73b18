//! A question's two rankings fused (issue 13): a question put in other words
//! is ranked by its own tool and, beside it, by the other tool (the text side
//! for `search_knowledge`, the title side for `search_note_content`; that one
//! without its own feedback, which measured the same and is a question
//! search's slowest part); the notes of its page are ordered again by
//! reciprocal rank fusion, the other ranking counting [`OTHER_WEIGHT`] of the
//! tool's own. A note both rankings hold near their top is more likely the
//! answer than one only the tool's own fields favour (a common word of the
//! question in a title, a heading), and the fusion cannot bring in a note the
//! tool did not find: it reorders the page, never fills it. Keyword and name
//! queries never get here.

use std::collections::HashMap;

/// The rank constant of reciprocal rank fusion: a note at rank `r` of a
/// ranking scores `weight / (RANK_CONSTANT + r)`. The usual 60 keeps the
/// tool's own order between notes the other ranking treats alike.
const RANK_CONSTANT: f32 = 60.0;

/// How much the other tool's ranking counts beside the tool's own (1). Being
/// among its best [`OTHER_DEPTH`] lifts a note two or three places of the page.
/// Chosen with `kb-index eval` on every suite (BENCHMARKS.md, "Questions in
/// other words"): 0.03 to 0.05 lift seven question cases and lower none; from
/// 0.07 a note the other ranking lacks falls (`where can I find a list of every
/// action I can run` over the whole help vault: *Command palette* 2 → 3, 4 at 0.1).
pub(super) const OTHER_WEIGHT: f32 = 0.05;

/// How many notes of the other tool's ranking count.
pub(super) const OTHER_DEPTH: usize = 10;

/// Orders the first `fused` of `hits` (the tool's own ranking, best first) by
/// their fused score; `other` is the other tool's ranking (paths, best first).
/// The hits after `fused` (holding fewer of the words, or lone characters only)
/// stay after them, in their order. Ties keep the tool's own order.
pub(super) fn fuse<T>(hits: &mut Vec<T>, fused: usize, other: &[&str], path: impl Fn(&T) -> &str) {
    let other_rank: HashMap<&str, usize> =
        other.iter().take(OTHER_DEPTH).enumerate().map(|(rank, path)| (*path, rank + 1)).collect();
    let rest = hits.split_off(fused.min(hits.len()));
    let score = |own_rank: usize, hit: &T| {
        let own = 1.0 / (RANK_CONSTANT + own_rank as f32);
        let other =
            other_rank.get(path(hit)).map_or(0.0, |&rank| OTHER_WEIGHT / (RANK_CONSTANT + rank as f32));
        own + other
    };
    let mut order: Vec<(f32, usize)> =
        hits.iter().enumerate().map(|(at, hit)| (score(at + 1, hit), at)).collect();
    order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut own: Vec<Option<T>> = std::mem::take(hits).into_iter().map(Some).collect();
    hits.extend(order.iter().filter_map(|&(_, from)| own[from].take()));
    hits.extend(rest);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fused(page: &[&'static str], fused: usize, other: &[&str]) -> Vec<&'static str> {
        let mut page = page.to_vec();
        fuse(&mut page, fused, other, |path| path);
        page
    }

    #[test]
    fn a_note_the_other_ranking_holds_rises_a_few_places() {
        assert_eq!(
            fused(&["a", "b", "c", "d", "e", "f"], 6, &["e", "x", "y"]),
            ["a", "e", "b", "c", "d", "f"]
        );
        let page: Vec<&str> = vec!["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
        assert_eq!(fused(&page, 10, &["j"])[6], "j");
    }

    #[test]
    fn the_other_ranking_reorders_the_page_and_never_adds_to_it() {
        assert_eq!(fused(&["a", "b", "c"], 3, &["z", "c"]), ["c", "a", "b"]);
        assert_eq!(fused(&["a", "b"], 2, &[]), ["a", "b"], "no other ranking: the tool's own order");
        let beyond: Vec<&str> = (0..OTHER_DEPTH).map(|_| "z").chain(["b"]).collect();
        assert_eq!(
            fused(&["a", "b"], 2, &beyond),
            ["a", "b"],
            "beyond its depth the other ranking says nothing"
        );
    }

    #[test]
    fn hits_after_the_fused_ones_stay_after_them() {
        assert_eq!(fused(&["a", "b", "c", "d"], 2, &["d", "b"]), ["b", "a", "c", "d"]);
    }
}
