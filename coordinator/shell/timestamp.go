package shell

import (
	"fmt"
	"time"

	"github.com/kvnode/kvnode/cell"
	"github.com/kvnode/kvnode/coordinator"
	"github.com/kvnode/kvnode/cql"
	"github.com/kvnode/kvnode/schema"
)

// DefaultMaxTimestampAhead is how far ahead of the coordinator's clock a client's USING
// TIMESTAMP may be when Options.MaxTimestampAhead is zero. A cell written d ahead of the clock
// shadows every later write and deletion that takes the clock's timestamp for d, so the bound
// is the longest a single bad timestamp can make a row immune to DELETE. An hour is far above
// the error of any client clock that is synchronised at all (NTP: milliseconds; an unsynchronised
// host: minutes) and refuses timestamps in the wrong unit (nanoseconds are thousands of years
// ahead) and clocks in the wrong time zone. ScyllaDB's restrict_future_timestamp allows 3 days.
const DefaultMaxTimestampAhead = time.Hour

// checkTimestamp refuses a client's USING TIMESTAMP that kvnode cannot store honestly: the
// reserved smallest int64 (cell.NoTimestamp marks an absent marker or deletion), and a timestamp
// more than e.maxAhead ahead of the coordinator's clock, which would shadow every later write
// and deletion of its cells until the clock caught up. Negative and small timestamps are
// accepted, as Cassandra and ScyllaDB accept them: they only lose to every later write. now is
// the coordinator's clock.
func (e *Executor) checkTimestamp(stmt cql.Statement, w *schema.Write, now time.Time) error {
	if !w.HasTimestamp {
		return nil
	}
	pos := timestampPos(stmt)
	if w.Timestamp == cell.NoTimestamp {
		return &coordinator.InvalidError{Pos: pos, Err: fmt.Errorf("USING TIMESTAMP %d is reserved (it marks an absent timestamp); the smallest allowed is %d", w.Timestamp, cell.NoTimestamp+1)}
	}
	nowMicros := now.UnixMicro()
	if w.Timestamp <= nowMicros {
		return nil
	}
	ahead := w.Timestamp - nowMicros // positive and no overflow: both operands are positive here
	if ahead <= e.maxAhead.Microseconds() {
		return nil
	}
	return &coordinator.InvalidError{Pos: pos, Err: fmt.Errorf("USING TIMESTAMP %d is %s ahead of this coordinator's clock; the limit is %v (max_timestamp_ahead; timestamps are microseconds since the Unix epoch)",
		w.Timestamp, formatAhead(ahead), e.maxAhead)}
}

// timestampPos returns the position of stmt's USING TIMESTAMP value, or the statement's when
// it has none.
func timestampPos(stmt cql.Statement) cql.Pos {
	var lit *cql.Literal
	switch s := stmt.(type) {
	case *cql.InsertStmt:
		lit = s.Timestamp
	case *cql.UpdateStmt:
		lit = s.Timestamp
	case *cql.DeleteStmt:
		lit = s.Timestamp
	}
	if lit == nil {
		return stmt.Pos()
	}
	return lit.Pos()
}

// formatAhead renders a positive number of microseconds for an error message: exactly under two
// days, in whole days under two years, in whole (365-day) years above.
func formatAhead(micros int64) string {
	const day = 24 * int64(time.Hour/time.Microsecond)
	const year = 365 * day
	switch {
	case micros >= 2*year:
		return fmt.Sprintf("%d years", micros/year)
	case micros >= 2*day:
		return fmt.Sprintf("%d days", micros/day)
	}
	return (time.Duration(micros) * time.Microsecond).String()
}
