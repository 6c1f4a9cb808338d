package sandbox

// Changes is what a command changed in its workspace, as turnlog applied it. Counts
// are exact; the lists hold the first MaxListedChanges of each (every step of the
// apply is in its journal, which Result.Applied reads).
type Changes struct {
	// Paths are the workspace paths changed — written, created, removed (every
	// path of a removed tree), or a directory's mode changed —, the first
	// MaxListedChanges of them; Count is how many there were.
	Paths []string `json:"paths,omitempty"`
	Count int      `json:"count"`
	// Refused are changes turnlog did not apply, and why; RefusedCount is how many.
	Refused      []Refusal `json:"refused,omitempty"`
	RefusedCount int       `json:"refused_count,omitempty"`
	// Modes are modes the command asked for that were lowered (never writable by
	// others; see docs/security.md); ModesCount is how many.
	Modes      []ModeChange `json:"modes,omitempty"`
	ModesCount int          `json:"modes_count,omitempty"`
	// Failed says why nothing at all was applied (the quota at apply time, an I/O
	// error — whatever was applied by then was taken back).
	Failed string `json:"failed,omitempty"`
}

// Refusal is one change of a command's that was not applied.
type Refusal struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// MaxListedChanges caps the lists of Changes.
const MaxListedChanges = 100

// Reasons a change is refused.
const (
	refusedGitInternals = ".git is read-only to commands (git's config, hooks and object pointers would run or reach code on the host)"
	refusedNewRepo      = "a command may not create a git repository (git would run its config when someone runs git here)"
	refusedSpecial      = "devices, fifos and sockets are not applied"
	refusedOwn          = ".turnlog at the top of a workspace is turnlog's own"
	refusedChanged      = "changed in the workspace since the command started (by another command, a file tool or someone on the host): the command's change was not applied over it"
	refusedHoldsKept    = "the directory it would replace holds what must stay (a change made since the command started, a .git, a denied file, a mount)"
	refusedMount        = "a mount of the host's sits there (the command saw only the directory beneath it)"
)

// helperReport is what the helper sends turnlog once it applied a command's writes.
type helperReport struct {
	Changes    Changes `json:"changes"`
	ApplyNanos int64   `json:"apply_ns"`
	Moved      int     `json:"moved"`  // entries moved to the staging directory
	Phases     []Phase `json:"phases"` // how long each of its steps took
}
