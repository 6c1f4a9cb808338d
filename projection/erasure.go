package projection

import "time"

// Erasure kinds: what an erasure was asked for.
const (
	ErasureSession   = "session"   // one session (and its branches, with cascade)
	ErasureUser      = "user"      // everything of one user
	ErasureRetention = "retention" // a session idle longer than its app keeps them
)

// ErasureRequest is one erasure a store carries out in one transaction: the
// sessions to remove and, for a user's erasure, the owner whose memories,
// idempotency records and sign-ins go too.
type ErasureRequest struct {
	ID       string
	Kind     string
	Subject  string // the session or user asked for
	By       string // who asked
	At       time.Time
	Sessions []string
	Owner    string // set for ErasureUser only
	// Suspended counts the sessions' suspended turns, which the erasure cancels.
	Suspended int
}

// ErasureCounts are the rows an erasure removed, by kind. They hold no content.
type ErasureCounts struct {
	Sessions      int `json:"sessions"`
	Events        int `json:"events"`
	Blobs         int `json:"blobs"`
	FileContents  int `json:"file_contents"`  // the undo log's contents no other session holds
	ContentChunks int `json:"content_chunks"` // and their chunks
	// WorkspaceFolders counts the folders of the sessions' own files removed from
	// the disk (a per-session workspace, its commands' home).
	WorkspaceFolders int `json:"workspace_folders,omitempty"`
	Turns            int `json:"turns"`
	SuspendedTurns   int `json:"suspended_turns_canceled"`
	HistoryItems     int `json:"history_items"`
	Interrupts       int `json:"interrupts"`
	QueuedInputs     int `json:"queued_inputs"`
	Memories         int `json:"memories"`
	IdempotencyKeys  int `json:"idempotency_keys"`
	Deliveries       int `json:"webhook_deliveries"`
	SignIns          int `json:"sign_ins"`
}

// ErasureReceipt is what an erasure leaves behind: what, when, by whom and how
// much — never what was erased.
type ErasureReceipt struct {
	ID       string        `json:"id"`
	Kind     string        `json:"kind"`
	Subject  string        `json:"subject"`
	By       string        `json:"by"`
	At       time.Time     `json:"at"`
	Sessions []string      `json:"sessions"`
	Counts   ErasureCounts `json:"counts"`
	// Scrubbed says the erased bytes are gone from the database's files too: the
	// write-ahead log was truncated after the erasure committed. False when readers
	// held it; the next checkpoint clears them then. Set on the answer to an
	// erasure only, not on a receipt read back later.
	Scrubbed *bool `json:"scrubbed,omitempty"`
}
