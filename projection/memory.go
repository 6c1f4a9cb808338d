package projection

import "time"

// Memory is one memory an agent saves for a user of an app (the memories table). It
// is not folded from events: a memory_save call writes it, keyed by its activity.
type Memory struct {
	App, Owner string
	Key        string // the activity that saved it: session/turn/path
	Label      string
	Text       string
	At         time.Time
	Vector     []float32 // nil without an embeddings provider
}

// MemoryHit is a memory a search found.
type MemoryHit struct {
	ID     int64     `json:"id"`
	Label  string    `json:"label,omitempty"`
	Text   string    `json:"text"`
	At     time.Time `json:"saved_at"`
	Vector []float32 `json:"-"`
}
