package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// On PostgreSQL a search's words are a tsvector per message with a GIN
// index, and neither way of reading it fits every word. Walking the
// messages newest first, testing each one's words, stops at the page's
// end: quick for a common word (a word in 8% of texts fills a page of 20 in
// 250 messages), but a word that matches nothing walks every message (a
// million: half a second to a second). The GIN index is quick for a rare
// word but builds the whole list of matches of a common one before the
// first row (a beginning of words in 8% of texts: 15 to 35 ms), and the
// planner cannot tell the two apart (a prefix's matches are unknown to its
// statistics). So a search walks the newest searchWindow messages first,
// and what it found there says how far the rest of the page is: when the
// window's matches put it within searchWalk messages, the walk goes on;
// otherwise (no match in the window: a rare word) the GIN index's matches
// below the window finish the page when they are at most
// searchGINMatches, and the walk when they are more (docs/benchmarks.md,
// "Search").
const (
	searchWindow     = 5_000
	searchWalk       = 100_000
	searchGINMatches = 2_000
)

func (s *Store) searchMessagesPG(ctx context.Context, f MessageSearch) ([]MessageHit, error) {
	window, matches := int64(searchWindow), searchGINMatches
	if s.searchWindow > 0 {
		window, matches = s.searchWindow, s.searchGINMatches
	}
	ts := tsQuery(f.Terms)
	top := f.Before // the walk's upper bound, exclusive
	if top == 0 {
		var max int64
		if err := s.db.QueryRow(ctx, `SELECT COALESCE(MAX(message_id), 0) FROM message_words`).Scan(&max); err != nil {
			return nil, fmt.Errorf("store: search messages: %w", err)
		}
		top = max + 1
	}
	lo := max(top-window, 0)
	hits, err := s.walkPG(ctx, f, ts, lo, top, f.Limit)
	if err != nil || len(hits) == f.Limit || lo == 0 {
		return hits, err
	}
	more := f.Limit - len(hits)
	if len(hits) > 0 && int64(more)*window/int64(len(hits)) <= searchWalk {
		rest, err := s.walkPG(ctx, f, ts, 0, lo, more)
		return append(hits, rest...), err
	}
	ids, err := s.matchesPG(ctx, ts, lo, matches)
	if err != nil {
		return nil, err
	}
	var rest []MessageHit
	if len(ids) > matches {
		rest, err = s.walkPG(ctx, f, ts, 0, lo, more)
	} else if len(ids) > 0 {
		rest, err = s.hitsPG(ctx, f, ids, more)
	}
	return append(hits, rest...), err
}

// walkPG is the walk down the messages with lo <= id < hi, newest first,
// to the page's end. The range is read in a subquery the planner may not
// merge (OFFSET 0), so that it walks the key and never asks the GIN index.
func (s *Store) walkPG(ctx context.Context, f MessageSearch, ts string, lo, hi int64, limit int) ([]MessageHit, error) {
	q := `SELECT ` + hitColumns + ` FROM (SELECT message_id, words FROM message_words WHERE message_id >= ? AND message_id < ?
		ORDER BY message_id DESC OFFSET 0) w JOIN messages m ON m.id = w.message_id
		JOIN conversations c ON c.id = m.conversation_id WHERE w.words @@ to_tsquery('simple', ?)`
	cond, args := hitFilters(f)
	return s.queryHits(ctx, f, q+cond+` ORDER BY w.message_id DESC LIMIT ?`, append(append([]any{lo, hi, ts}, args...), limit)...)
}

// matchesPG returns the ids below hi whose words match ts, from the GIN
// index, stopping after limit+1 (then there are too many).
func (s *Store) matchesPG(ctx context.Context, ts string, hi int64, limit int) ([]int64, error) {
	rows, err := s.db.QueryPlanned(ctx, `SELECT message_id FROM message_words WHERE words @@ to_tsquery('simple', ?) AND message_id < ? LIMIT ?`,
		ts, hi, limit+1)
	if err != nil {
		return nil, fmt.Errorf("store: search messages: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("store: search messages: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// hitsPG returns the page of messages among ids that the filters keep,
// newest first.
func (s *Store) hitsPG(ctx context.Context, f MessageSearch, ids []int64, limit int) ([]MessageHit, error) {
	var arr strings.Builder
	arr.WriteByte('{')
	for i, id := range ids {
		if i > 0 {
			arr.WriteByte(',')
		}
		arr.WriteString(strconv.FormatInt(id, 10))
	}
	arr.WriteByte('}')
	q := `SELECT ` + hitColumns + ` FROM messages m JOIN conversations c ON c.id = m.conversation_id WHERE m.id = ANY(?::bigint[])`
	cond, args := hitFilters(f)
	return s.queryHits(ctx, f, q+cond+` ORDER BY m.id DESC LIMIT ?`, append(append([]any{arr.String()}, args...), limit)...)
}
