package turnlog

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/turnlog/turnlog/adapters/stores/sqlrows"
	"github.com/turnlog/turnlog/events"
)

// replaySource reads a log to replay it and never writes to it: a SQLite file opened
// read-only, or a PostgreSQL database read in read-only transactions. It needs no
// migration and applies none.
type replaySource struct {
	db *sql.DB
	pg bool
}

// recordedSession is a session of the source, as a replay selects it.
type recordedSession struct {
	ID, App, Parent string
	CreatedAt       time.Time
}

func openReplaySource(dsn string) (*replaySource, error) {
	if IsPostgres(dsn) {
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", shownDSN(dsn), err)
		}
		return &replaySource{db: db, pg: true}, nil
	}
	path := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(dsn) // a file name, not a URI's parts
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dsn, err)
	}
	return &replaySource{db: db}, nil
}

// shownDSN is a PostgreSQL URL without its password.
func shownDSN(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return "the database"
	}
	return u.Redacted()
}

func (s *replaySource) Close() error { return s.db.Close() }

// read runs fn in a read-only transaction.
func (s *replaySource) read(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("read the log: %w", err)
	}
	defer tx.Rollback()
	return fn(tx)
}

func (s *replaySource) query(q string) string {
	if s.pg {
		return sqlrows.Dollar(q)
	}
	return q
}

// sessions lists every session of the log, in the order they were created.
func (s *replaySource) sessions(ctx context.Context) ([]recordedSession, error) {
	var out []recordedSession
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, app, coalesce(parent_id, ''), created_at FROM proj_sessions ORDER BY created_at, id`)
		if err != nil {
			return fmt.Errorf("list the sessions: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var r recordedSession
			var created string
			if err := rows.Scan(&r.ID, &r.App, &r.Parent, &created); err != nil {
				return err
			}
			if r.CreatedAt, err = time.Parse(time.RFC3339Nano, created); err != nil {
				return fmt.Errorf("session %s: created_at %q: %w", r.ID, created, err)
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	return out, err
}

// events reads a session's events, in seq order.
func (s *replaySource) events(ctx context.Context, session string) ([]events.Event, error) {
	var out []events.Event
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, s.query(`SELECT e.session_id, e.seq, e.turn_id, e.type, e.path, e.v, e.data, e.blob_hash, b.data, e.at
			FROM events e LEFT JOIN blobs b ON b.hash = e.blob_hash WHERE e.session_id = ? ORDER BY e.seq`), session)
		if err != nil {
			return fmt.Errorf("read the events of %s: %w", session, err)
		}
		out, err = sqlrows.All(rows, sqlrows.ScanEvent)
		return err
	})
	return out, err
}
