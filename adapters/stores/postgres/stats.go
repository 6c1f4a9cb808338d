package postgres

import "context"

// Stats is what the store holds now, for an operator's gauges.
type Stats struct {
	RunningTurns, WaitingTurns int64 // waiting: suspended for people's answers
	QueuedInputs               int64
	OutboxPending              int64 // webhook deliveries not yet delivered nor dead
	DBBytes                    int64 // the whole database's size on disk
}

// Stats counts the open turns, queued inputs and pending webhook deliveries, and
// sizes the database.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	err := s.db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM proj_turns WHERE status = 'running'),
		(SELECT count(*) FROM proj_turns WHERE status = 'suspended'),
		(SELECT count(*) FROM proj_queue WHERE status = 'queued'),
		(SELECT count(*) FROM webhook_outbox WHERE status IN ('pending', 'sending')),
		pg_database_size(current_database())`).Scan(&st.RunningTurns, &st.WaitingTurns, &st.QueuedInputs, &st.OutboxPending, &st.DBBytes)
	return st, err
}
