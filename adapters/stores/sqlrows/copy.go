package sqlrows

import "context"

// CopiedTable is a table whose rows are not folded from the log, so a move from one
// store to another copies them as they are. Columns leaves out what each store makes
// itself (a search index); Order is the order rows are read and written in. Identity
// says the first column is a row id that the store otherwise numbers itself: the
// move keeps it, and the store numbers new rows after it.
type CopiedTable struct {
	Name     string
	Columns  []string
	Order    string
	Identity bool
}

// CopiedTables are what a move between stores carries over, in the order it writes
// them: blobs before the events that name them, and the events in the order they
// were appended (a branch's source before the branch), so that folding them again
// builds the same read models. Sign-ins are not carried: people sign in again.
var CopiedTables = []CopiedTable{
	{Name: "blobs", Columns: []string{"hash", "size", "data"}, Order: "hash"},
	{Name: "events", Columns: []string{"id", "session_id", "seq", "turn_id", "type", "path", "v", "data", "blob_hash", "at"}, Order: "id", Identity: true},
	{Name: "content_chunks", Columns: []string{"hash", "data"}, Order: "hash"},
	{Name: "contents", Columns: []string{"hash", "size", "chunks"}, Order: "hash"},
	{Name: "content_refs", Columns: []string{"session_id", "hash"}, Order: "session_id, hash"},
	{Name: "memories", Columns: []string{"id", "app", "owner", "key", "label", "text", "created_at", "vector"}, Order: "id", Identity: true},
	{Name: "idempotency_keys", Columns: []string{"owner", "key", "route", "body_hash", "session_id", "turn_id", "start_seq", "created_at", "expires_at"}, Order: "owner, key"},
	{Name: "webhook_outbox", Columns: []string{"delivery_id", "app", "webhook", "event", "session_id", "seq", "turn_id", "status", "attempts",
		"next_at_ms", "created_at", "delivered_at", "last_status", "last_error"}, Order: "delivery_id"},
	{Name: "erasures", Columns: []string{"id", "kind", "subject", "by_user", "at", "sessions", "counts"}, Order: "id"},
}

// Snapshot reads a store's copied tables as they stood at one moment.
type Snapshot interface {
	// Rows calls each with every row of t, its values in t.Columns' order, in t.Order.
	Rows(ctx context.Context, t CopiedTable, each func(values []any) error) error
}
