// Package undo is the workspace's undo log as data: what a tool call changed in its
// workspace, path by path, before and after (FilesChanged), with contents cut at
// content-defined boundaries and named by their hashes, so that a content is held
// once however many turns and sessions hold it and an edit of one line of a large
// file holds only the chunks around the line.
//
// It owns the chunking (Split), whose boundaries must never change (contents
// already stored are found again by them), what reverting changes takes (Plan), how
// a change of a text reads as a diff (Diff), and which changes a person is shown a
// diff of (Diffable, DiffsShown) — the only ones whose after side is kept.
//
// It must never touch a workspace (the
// sandbox reads and restores files) nor store anything (the stores do).
package undo
