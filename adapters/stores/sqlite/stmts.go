package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// readStmts keeps the read pool's statements prepared: a query is parsed once per
// connection instead of on every call (parsing cost more than a primary-key lookup).
type readStmts struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// prepared returns q prepared on the read pool.
func (s *Store) prepared(ctx context.Context, q string) (*sql.Stmt, error) {
	s.reads.mu.Lock()
	defer s.reads.mu.Unlock()
	if st, ok := s.reads.stmts[q]; ok {
		return st, nil
	}
	st, err := s.read.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	if s.reads.stmts == nil {
		s.reads.stmts = map[string]*sql.Stmt{}
	}
	s.reads.stmts[q] = st
	return st, nil
}

// queryRow runs a prepared single-row read.
func (s *Store) queryRow(ctx context.Context, q string, args ...any) *sql.Row {
	st, err := s.prepared(ctx, q)
	if err != nil {
		return s.read.QueryRowContext(ctx, q, args...) // reports the same error through Scan
	}
	return st.QueryRowContext(ctx, args...)
}

// query runs a prepared read.
func (s *Store) query(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	st, err := s.prepared(ctx, q)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (s *Store) closeStmts() {
	s.reads.mu.Lock()
	defer s.reads.mu.Unlock()
	for _, st := range s.reads.stmts {
		st.Close()
	}
	s.reads.stmts = nil
}
