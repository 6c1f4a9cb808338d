package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// projectionOrder gives each projection table a total order for dumps.
func projectionOrder(table string) string {
	switch table {
	case "proj_sessions":
		return "id"
	case "proj_turns":
		return "session_id, turn_id"
	case "proj_interrupts":
		return "session_id, interrupt_id"
	case "proj_spend":
		return "session_id, agent, llm, day"
	case "proj_budget_extensions", "proj_eval_results":
		return "session_id, seq"
	case "proj_queue":
		return "session_id, turn_id"
	}
	return "session_id, seq, idx"
}

// DumpProjections renders every projection table as text, rows in key order, so two
// stores' read models can be compared (rebuild must equal incremental maintenance).
func (s *Store) DumpProjections(ctx context.Context) (string, error) {
	var b strings.Builder
	for _, t := range projectionTables {
		rows, err := s.read.QueryContext(ctx, "SELECT * FROM "+t+" ORDER BY "+projectionOrder(t))
		if err != nil {
			return "", fmt.Errorf("dump %s: %w", t, err)
		}
		if err := dumpRows(&b, t, rows); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

func dumpRows(b *strings.Builder, table string, rows *sql.Rows) error {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "== %s (%s)\n", table, strings.Join(cols, ", "))
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if i > 0 {
				b.WriteString(" | ")
			}
			if bs, ok := v.([]byte); ok {
				v = string(bs)
			}
			fmt.Fprint(b, v)
		}
		b.WriteByte('\n')
	}
	return rows.Err()
}
