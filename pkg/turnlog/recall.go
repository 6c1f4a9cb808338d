package turnlog

import (
	"context"
	"math"

	"github.com/tidwall/gjson"
	"github.com/turnlog/turnlog/adapters/tools/workspacetools"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// sessionLog is what recalling a session's reads needs of the store.
type sessionLog interface {
	Session(ctx context.Context, id string) (projection.Session, error)
	Events(ctx context.Context, session string, after int64) ([]events.Event, error)
}

// fileTools are the tools whose outputs say what a session saw of a file.
var fileTools = map[string]bool{"read_file": true, "write_file": true, "edit_file": true}

// recallReads reads from the log what a session last read or wrote of each file — a
// branch's source up to the branch point first, then the branch —, so edit_file
// works on a file read before a restart or in a turn that was replayed; a path a
// revert put back is forgotten until it is read again.
func recallReads(log sessionLog) workspacetools.Recall {
	return func(ctx context.Context, session string) (map[string]string, error) {
		type part struct {
			id   string
			upTo int64
		}
		var chain []part
		for id, upTo := session, int64(math.MaxInt64); id != "" && len(chain) < 1000; {
			s, err := log.Session(ctx, id)
			if err != nil {
				return nil, err
			}
			chain = append(chain, part{id, upTo})
			id, upTo = s.ParentID, s.ParentSeq
		}
		hashes := map[string]string{}
		for i := len(chain) - 1; i >= 0; i-- {
			evs, err := log.Events(ctx, chain[i].id, 0)
			if err != nil {
				return nil, err
			}
			for _, ev := range evs {
				if ev.Seq > chain[i].upTo {
					break
				}
				if ev.Type == events.TypeWorkspaceReverted {
					// What a revert put back counts as unread: edit_file asks for a read first.
					if wr, err := events.DecodeAs[*events.WorkspaceReverted](ev); err == nil {
						for _, c := range wr.Changes {
							delete(hashes, c.Path)
						}
					}
					continue
				}
				if ev.Type != events.TypeToolResulted {
					continue
				}
				tr, err := events.DecodeAs[*events.ToolResulted](ev)
				if err != nil || tr.IsError || !fileTools[tr.Tool] {
					continue
				}
				path, sum := gjson.Get(tr.Output, "path"), gjson.Get(tr.Output, "sha256")
				if path.Type == gjson.String && sum.Type == gjson.String {
					hashes[path.Str] = sum.Str
				}
			}
		}
		return hashes, nil
	}
}
