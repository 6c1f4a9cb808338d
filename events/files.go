package events

import (
	"crypto/sha256"
	"encoding/hex"
)

const (
	TypeFilesChanged      = "FilesChanged"
	TypeWorkspaceReverted = "WorkspaceReverted"
)

// FilesChanged is what one tool call changed in its workspace — the apply of a
// command's writes, or a file tool's write — path by path, as it was before and as
// it is after: the undo log's record, appended with the call's result (path
// `<call's path>/files`). Contents are named by hash (FileState.Hash); the append
// that carries the event holds them (Event.Contents), once, in chunks.
type FilesChanged struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Workspace is the workspace's folder below the workspaces' root ("" for the
	// root itself).
	Workspace string       `json:"workspace,omitempty"`
	Changes   []FileChange `json:"changes"`
}

func (*FilesChanged) EventType() string  { return TypeFilesChanged }
func (*FilesChanged) SchemaVersion() int { return 1 }

// WorkspaceReverted is a revert: the files of the turns it names put back as they
// were before them (or, undoing an earlier revert, as they were before it), by whom;
// Changes say what it changed, as FilesChanged's do — a revert is itself a change
// that can be reverted.
type WorkspaceReverted struct {
	RevertID string `json:"revert_id"`
	// Turns are the turns reverted, newest first; Revert the revert undone instead.
	Turns     []string     `json:"turns,omitempty"`
	Revert    string       `json:"revert,omitempty"`
	By        string       `json:"by"`
	Forced    bool         `json:"forced,omitempty"` // paths changed since were overwritten
	Workspace string       `json:"workspace,omitempty"`
	Changes   []FileChange `json:"changes"`
}

func (*WorkspaceReverted) EventType() string  { return TypeWorkspaceReverted }
func (*WorkspaceReverted) SchemaVersion() int { return 1 }

// FileChange is one path: Before or After is nil where there was or is nothing.
// NotRevertible, when set, says why a revert cannot put Before back (a cap, an
// excluded path, a change another writer made over the call's): the change is
// recorded with its hashes only.
type FileChange struct {
	Path          string     `json:"path"`
	Before        *FileState `json:"before,omitempty"`
	After         *FileState `json:"after,omitempty"`
	NotRevertible string     `json:"not_revertible,omitempty"`
}

// Kinds of a FileState.
const (
	FileKindFile    = "file"
	FileKindDir     = "dir"
	FileKindSymlink = "symlink"
)

// FileState is an entry of a workspace as a restore puts it back.
type FileState struct {
	Kind   string `json:"kind"`
	Mode   uint32 `json:"mode"` // permission, set-id and sticky bits
	UID    uint32 `json:"uid"`
	GID    uint32 `json:"gid"`
	Mtime  string `json:"mtime"` // RFC 3339 in UTC, to the nanosecond
	Size   int64  `json:"size,omitempty"`
	Hash   string `json:"hash,omitempty"`   // a file's content, when it was read
	Target string `json:"target,omitempty"` // a symlink's
}

// Content is a file's content an append holds for the undo log: its hash and size,
// and its chunks in order. A chunk's Data is set when the append carries its bytes
// (a store keeps each chunk once, whoever sends it again).
type Content struct {
	Hash   string
	Size   int64
	Chunks []Chunk
}

// Chunk is one piece of a content (package undo cuts them).
type Chunk struct {
	Hash string
	Data []byte
}

// HashOf names a content or a chunk: "sha256:" and its SHA-256 in hex.
func HashOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}
