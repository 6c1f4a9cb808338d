package sqlrows

import (
	"database/sql"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projection"
)

// ReadSpend reads a spend query's rows: kind ('s' the session's spend by agent, 'd'
// the owner's day in the app by agent, 'x' an extension), agent, scope, level, day,
// calls, input, cached, output and reasoning tokens, total tokens, cost.
func ReadSpend(rows *sql.Rows, err error) (projection.Spend, error) {
	out := projection.Spend{Session: map[string]projection.SpendFigures{}, Day: map[string]projection.SpendFigures{}}
	if err != nil {
		return out, fmt.Errorf("read spend: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind, agent, scope, level, day string
		var calls, in, cached, outTokens, reasoning, total int64
		var cost float64
		if err := rows.Scan(&kind, &agent, &scope, &level, &day, &calls, &in, &cached, &outTokens, &reasoning, &total, &cost); err != nil {
			return out, fmt.Errorf("read spend: %w", err)
		}
		f := projection.SpendFigures{Calls: calls, Cost: cost,
			Usage: events.Usage{InputTokens: in, CachedTokens: cached, OutputTokens: outTokens, ReasoningTokens: reasoning}}
		switch kind {
		case "s":
			out.Session[agent] = f
		case "d":
			out.Day[agent] = f
		default:
			out.Extensions = append(out.Extensions, projection.BudgetExtension{Scope: scope, Level: level, Agent: agent, Day: day,
				Amounts: events.BudgetAmounts{InputTokens: in, OutputTokens: outTokens, TotalTokens: total, Cost: cost}})
		}
	}
	if err := rows.Err(); err != nil {
		return out, fmt.Errorf("read spend: %w", err)
	}
	return out, nil
}
