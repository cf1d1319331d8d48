package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocql/gocql"
)

// The levels part's keyspace and table, on a 3-node cluster of its own with password
// authentication.
const (
	levelsKeyspace = "perf_lv"
	tableLevels    = levelsKeyspace + ".t"
	levelsAdminPW  = "perf admin password"
	levelsRolePW   = "perf role password"
)

// levelsSettings are the levels part's sizes.
type levelsSettings struct {
	// Limit is the tenant's service level, writes/s; Offered the tenant's open-loop rate.
	Limit   int     `json:"limit"`
	Offered float64 `json:"offered"`
	// Duration is the tenant's limited phase; its first First seconds are left out of the
	// mean (the counters' onset), and so is its last, cut short by the end of the phase.
	Duration time.Duration `json:"-"`
	First    int           `json:"first_s"`
	// The other role's throughput beside the limited tenant is measured in Rounds pairs of
	// Window-long phases, alone and beside the tenant offered Offered, in alternating order;
	// the headline is the median pair's ratio (a 2-core machine's throughput drifts more
	// between phases far apart than within a pair). Workers is its closed loop.
	Rounds  int           `json:"other_rounds"`
	Window  time.Duration `json:"-"`
	Workers int           `json:"other_workers"`
	// ClientLimit is each client's level and OrgLimit their organization's, writes/s. The first
	// client runs OrgDuration at Offered; the second joins after JoinAfter at the same rate.
	ClientLimit int           `json:"client_limit"`
	OrgLimit    int           `json:"org_limit"`
	OrgDuration time.Duration `json:"-"`
	JoinAfter   time.Duration `json:"-"`
	// Partitions is how many partitions each role's writes spread over (no partition limit).
	Partitions int `json:"partitions"`
}

// levelsResult is what the levels part measured.
type levelsResult struct {
	Settings levelsSettings `json:"settings"`
	// TenantPerSecond is the tenant's accepted writes in each second of its limited phase;
	// TenantOverLimit their mean from second First+1 to the phase's last whole second, over
	// the limit.
	TenantPerSecond []int64 `json:"tenant_accepted_per_second"`
	TenantOverLimit float64 `json:"tenant_accepted_over_limit"`
	TenantRejected  int64   `json:"tenant_rejected"`
	TenantErrors    int64   `json:"tenant_errors"`
	// OtherAlone and OtherBeside are the other role's closed-loop writes/s in each round's
	// phase alone and beside the limited tenant; OtherRatio is the median round's ratio.
	OtherAlone  []float64 `json:"other_alone_ops_per_s"`
	OtherBeside []float64 `json:"other_beside_ops_per_s"`
	OtherRatio  float64   `json:"other_ratio"`
	// Client1PerSecond and Client2PerSecond are the two clients' accepted writes per second of
	// the organization phase (the second client's seconds counted from the phase's start too).
	Client1PerSecond []int64 `json:"client1_accepted_per_second"`
	Client2PerSecond []int64 `json:"client2_accepted_per_second"`
	// Client1AloneOverLimit is the first client's mean before the second joins, over its level;
	// after the join, each client's mean over its level and both together over the
	// organization's level.
	Client1AloneOverLimit float64 `json:"client1_alone_over_client_limit"`
	Client1JointOverLimit float64 `json:"client1_joint_over_client_limit"`
	Client2JointOverLimit float64 `json:"client2_joint_over_client_limit"`
	OrgJointOverLimit     float64 `json:"org_joint_over_org_limit"`
}

// levelsPart runs the levels part on a 3-node cluster of its own (--sync=false, --authenticator
// password): a tenant's service level against an offered rate ten times it, beside another
// role's closed loop; then two clients of one organization, each with a level of its own, the
// second joining half way. Every session is gocql round-robin over the three nodes, so each
// budget is held across coordinators.
func levelsPart(ctx context.Context, s settings, bin, root string, res *Result, log io.Writer) error {
	ls := s.Levels
	r := &levelsResult{Settings: ls}
	res.Levels = r
	pwFile := filepath.Join(root, "levels-superuser-password")
	if err := os.WriteFile(pwFile, []byte(levelsAdminPW+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintln(log, "perf: starting 3 node(s), --sync=false --authenticator password")
	c, err := startCluster(ctx, bin, root, "levels", 3, false, "--authenticator", "password", "--superuser-password-file", pwFile)
	if err == nil {
		err = runLevels(ctx, ls, c, r, log)
	}
	return errors.Join(err, c.stop())
}

func runLevels(ctx context.Context, ls levelsSettings, c *testCluster, r *levelsResult, log io.Writer) error {
	admin, err := levelsSession(ctx, c.cqlAddrs(), "admin", levelsAdminPW)
	if err != nil {
		return err
	}
	defer admin.Close()
	ddl := []string{
		"CREATE KEYSPACE " + levelsKeyspace + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}",
		"CREATE TABLE " + tableLevels + " " + tableColumns,
		"CREATE ROLE org",
		fmt.Sprintf("CREATE SERVICE LEVEL sl_tenant WITH max_writes_per_second = %d", ls.Limit),
		fmt.Sprintf("CREATE SERVICE LEVEL sl_org WITH max_writes_per_second = %d", ls.OrgLimit),
		fmt.Sprintf("CREATE SERVICE LEVEL sl_c1 WITH max_writes_per_second = %d", ls.ClientLimit),
		fmt.Sprintf("CREATE SERVICE LEVEL sl_c2 WITH max_writes_per_second = %d", ls.ClientLimit),
		"ATTACH SERVICE LEVEL sl_org TO org",
	}
	for _, role := range []string{"tenant", "other", "c1", "c2"} {
		ddl = append(ddl, "CREATE ROLE "+role+" WITH PASSWORD = '"+levelsRolePW+"' AND LOGIN = true",
			"GRANT MODIFY ON KEYSPACE "+levelsKeyspace+" TO "+role)
	}
	ddl = append(ddl, "ATTACH SERVICE LEVEL sl_tenant TO tenant", "ATTACH SERVICE LEVEL sl_c1 TO c1", "ATTACH SERVICE LEVEL sl_c2 TO c2",
		"GRANT org TO c1", "GRANT org TO c2")
	for _, st := range ddl {
		if err := admin.Query(st).WithContext(ctx).Exec(); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	sessions := map[string]*gocql.Session{}
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()
	for _, role := range []string{"tenant", "other", "c1", "c2"} {
		s, err := levelsSession(ctx, c.cqlAddrs(), role, levelsRolePW)
		if err != nil {
			return err
		}
		sessions[role] = s
	}

	// The tenant's level held, beside the other role.
	fmt.Fprintf(log, "perf: levels: the tenant offered %.0f writes/s at a level of %d for %v, beside the other role\n", ls.Offered, ls.Limit, ls.Duration)
	var wg sync.WaitGroup
	var tenant openLoopCounts
	wg.Go(func() {
		tenant = openLoop(ctx, sessions["tenant"], "tenant", ls.Offered, 0, ls.Duration, ls.Partitions)
	})
	closedLoop(ctx, sessions["other"], "other", ls.Workers, ls.Duration, ls.Partitions)
	wg.Wait()
	// The other role alone and beside the tenant, in pairs.
	var ratios []float64
	for i := range ls.Rounds {
		fmt.Fprintf(log, "perf: levels: round %d of %d: the other role alone and beside the tenant, %v each\n", i+1, ls.Rounds, ls.Window)
		var alone, beside float64
		besidePhase := func() {
			var wg sync.WaitGroup
			wg.Go(func() { openLoop(ctx, sessions["tenant"], "tenant", ls.Offered, 0, ls.Window, ls.Partitions) })
			beside = closedLoop(ctx, sessions["other"], "other", ls.Workers, ls.Window, ls.Partitions)
			wg.Wait()
		}
		if i%2 == 0 {
			alone = closedLoop(ctx, sessions["other"], "other", ls.Workers, ls.Window, ls.Partitions)
			besidePhase()
		} else {
			besidePhase()
			alone = closedLoop(ctx, sessions["other"], "other", ls.Workers, ls.Window, ls.Partitions)
		}
		r.OtherAlone, r.OtherBeside = append(r.OtherAlone, alone), append(r.OtherBeside, beside)
		ratios = append(ratios, ratio(beside, alone))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	r.OtherRatio = median(ratios)
	r.TenantPerSecond, r.TenantRejected, r.TenantErrors = tenant.accepted, tenant.rejected, tenant.errors
	if tenant.firstErr != "" {
		fmt.Fprintf(log, "perf: levels: the tenant's first error: %s\n", tenant.firstErr)
	}
	r.TenantOverLimit = meanSeconds(tenant.accepted, ls.First, len(tenant.accepted)-1) / float64(ls.Limit)

	// Two clients of one organization.
	fmt.Fprintf(log, "perf: levels: client c1 offered %.0f writes/s for %v, c2 joining after %v\n", ls.Offered, ls.OrgDuration, ls.JoinAfter)
	var c1, c2 openLoopCounts
	wg.Go(func() { c1 = openLoop(ctx, sessions["c1"], "c1", ls.Offered, 0, ls.OrgDuration, ls.Partitions) })
	wg.Go(func() {
		c2 = openLoop(ctx, sessions["c2"], "c2", ls.Offered, ls.JoinAfter, ls.OrgDuration, ls.Partitions)
	})
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	r.Client1PerSecond, r.Client2PerSecond = c1.accepted, c2.accepted
	join := int(ls.JoinAfter / time.Second)
	last := len(c1.accepted) - 1
	r.Client1AloneOverLimit = meanSeconds(c1.accepted, ls.First, join) / float64(ls.ClientLimit)
	r.Client1JointOverLimit = meanSeconds(c1.accepted, join+ls.First, last) / float64(ls.ClientLimit)
	r.Client2JointOverLimit = meanSeconds(c2.accepted, join+ls.First, last) / float64(ls.ClientLimit)
	r.OrgJointOverLimit = (meanSeconds(c1.accepted, join+ls.First, last) + meanSeconds(c2.accepted, join+ls.First, last)) / float64(ls.OrgLimit)
	for _, x := range []openLoopCounts{c1, c2} {
		if x.errors > 0 {
			return fmt.Errorf("levels: %d writes failed with errors other than a rate limit; the first: %s", x.errors, x.firstErr)
		}
	}
	if tenant.errors > 0 {
		return fmt.Errorf("levels: %d of the tenant's writes failed with errors other than a rate limit; the first: %s", tenant.errors, tenant.firstErr)
	}
	return nil
}

// levelsSession logs in as role with password through gocql, round-robin over addrs (no token
// awareness: every node coordinates the role's requests in turn), at QUORUM, never retrying.
// It waits for the login to work: right after the cluster starts, system_auth may not answer
// yet.
func levelsSession(ctx context.Context, addrs []string, role, password string) (*gocql.Session, error) {
	cluster := gocqlCluster(addrs)
	cluster.PoolConfig.HostSelectionPolicy = gocql.RoundRobinHostPolicy()
	cluster.Authenticator = gocql.PasswordAuthenticator{Username: role, Password: password}
	deadline := time.Now().Add(joinTimeout)
	for {
		s, err := cluster.CreateSession()
		if err == nil {
			return s, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("gocql session as %s on %s: %w", role, strings.Join(addrs, ","), err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// levelsInsert is the write every levels phase makes: role's row i of Partitions partitions.
const levelsInsert = "INSERT INTO " + tableLevels + " (k, c, v) VALUES (?, ?, ?)"

func levelsWrite(ctx context.Context, sess *gocql.Session, role string, i int64, partitions int) error {
	q := sess.Query(levelsInsert, fmt.Sprintf("%s-%d", role, i%int64(partitions)), int32(i%64), "v").WithContext(ctx)
	err := q.Exec()
	q.Release()
	return err
}

// closedLoop writes as role from workers goroutines for d and returns the accepted writes per
// second (any failure counts as none).
func closedLoop(ctx context.Context, sess *gocql.Session, role string, workers int, d time.Duration, partitions int) float64 {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var next, ok atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				if levelsWrite(ctx, sess, role, next.Add(1), partitions) == nil && ctx.Err() == nil {
					ok.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(ok.Load()) / time.Since(start).Seconds()
}

// openLoopCounts is what openLoop counted: accepted writes per second since the phase's
// start, rate-limit rejections and other errors.
type openLoopCounts struct {
	accepted         []int64
	rejected, errors int64
	firstErr         string
}

// openLoop offers role's writes at rate from delay after its start until d after it, from as
// many goroutines as the rate needs, and counts the accepted writes by the second of the phase
// (from its start) they were sent in.
func openLoop(ctx context.Context, sess *gocql.Session, role string, rate float64, delay, d time.Duration, partitions int) openLoopCounts {
	start := time.Now()
	seconds := int((d + time.Second - 1) / time.Second)
	acc := make([]atomic.Int64, seconds)
	var rej, errs atomic.Int64
	var firstErr sync.Once
	var first string
	if delay > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
	n := int64(rate * (d - delay).Seconds())
	due := make(chan int64, 256)
	var wg sync.WaitGroup
	for range 128 {
		wg.Go(func() {
			for i := range due {
				sec := int(time.Since(start) / time.Second)
				err := levelsWrite(ctx, sess, role, i, partitions)
				limited, _ := rateLimited(err)
				switch {
				case err == nil:
					if sec < seconds {
						acc[sec].Add(1)
					}
				case limited:
					rej.Add(1)
				case ctx.Err() == nil:
					errs.Add(1)
					firstErr.Do(func() { first = err.Error() })
				}
			}
		})
	}
	pace(ctx, time.Now(), n, rate, due)
	wg.Wait()
	out := openLoopCounts{accepted: make([]int64, seconds), rejected: rej.Load(), errors: errs.Load(), firstErr: first}
	for i := range acc {
		out.accepted[i] = acc[i].Load()
	}
	return out
}

// rates formats writes/s rates for the targets' table.
func rates(vs []float64) string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = fmt.Sprintf("%.0f", v)
	}
	return strings.Join(out, ", ")
}

// meanSeconds returns the mean of per[from:to] (0 when empty).
func meanSeconds(per []int64, from, to int) float64 {
	to = min(to, len(per))
	if from >= to {
		return 0
	}
	var sum int64
	for _, v := range per[from:to] {
		sum += v
	}
	return float64(sum) / float64(to-from)
}

// The levels part's targets (issue 31).
const (
	targetLevelLow    = 0.9  // a level's accepted rate / its limit, from its second second
	targetLevelHigh   = 1.1  //
	targetLevelOthers = 0.95 // the other role's throughput beside the limited tenant, × alone
)

func (r *levelsResult) targets() []target {
	within := func(x float64) bool { return x >= targetLevelLow && x <= targetLevelHigh }
	return []target{
		{fmt.Sprintf("a level at %d writes/s offered %.0f/s round-robin over 3 nodes: accepted / limit within 0.9–1.1 from its second second", r.Settings.Limit, r.Settings.Offered),
			fmt.Sprintf("%.3f", r.TenantOverLimit), within(r.TenantOverLimit)},
		{"a second role's throughput beside it ≥ 0.95 × alone (same run, median of alternating pairs)",
			fmt.Sprintf("%.3f (beside %s; alone %s writes/s)", r.OtherRatio, rates(r.OtherBeside), rates(r.OtherAlone)), r.OtherRatio >= targetLevelOthers},
		{"a client's level holds alone, and with a second client of its organization both the clients' levels and the organization's hold",
			fmt.Sprintf("c1 alone %.3f of its level; joint: c1 %.3f, c2 %.3f of theirs, organization %.3f of its", r.Client1AloneOverLimit, r.Client1JointOverLimit, r.Client2JointOverLimit, r.OrgJointOverLimit),
			within(r.Client1AloneOverLimit) && r.Client1JointOverLimit <= targetLevelHigh && r.Client2JointOverLimit <= targetLevelHigh && within(r.OrgJointOverLimit)},
	}
}

func (r *levelsResult) writeText(b *strings.Builder) {
	ls := r.Settings
	fmt.Fprintf(b, "\n## Service levels (3 nodes, --sync=false, password authentication, gocql round-robin)\n\n")
	fmt.Fprintf(b, "The tenant's level: %d writes/s, offered %.0f/s for %v beside another role's closed loop of %d workers; then %d pairs of %v phases of that role alone and beside the tenant, in alternating order. ",
		ls.Limit, ls.Offered, ls.Duration, ls.Workers, ls.Rounds, ls.Window)
	fmt.Fprintf(b, "Two clients with levels of %d writes/s each, both granted a role whose level is %d: c1 offered %.0f/s for %v, c2 the same from %v.\n\n",
		ls.ClientLimit, ls.OrgLimit, ls.Offered, ls.OrgDuration, ls.JoinAfter)
	fmt.Fprintf(b, "| measure | value |\n|---|---:|\n")
	fmt.Fprintf(b, "| tenant accepted / limit (seconds %d–%d) | %.3f |\n", ls.First+1, len(r.TenantPerSecond)-1, r.TenantOverLimit)
	fmt.Fprintf(b, "| tenant rejected | %d |\n", r.TenantRejected)
	fmt.Fprintf(b, "| other role beside / alone (median pair) | %.3f |\n", r.OtherRatio)
	fmt.Fprintf(b, "| c1 alone / its level | %.3f |\n", r.Client1AloneOverLimit)
	fmt.Fprintf(b, "| after c2 joins: c1, c2 / their levels | %.3f, %.3f |\n", r.Client1JointOverLimit, r.Client2JointOverLimit)
	fmt.Fprintf(b, "| after c2 joins: c1 + c2 / the organization's level | %.3f |\n", r.OrgJointOverLimit)
	fmt.Fprintf(b, "\nTenant accepted per second: %v\n\nc1 per second: %v\n\nc2 per second: %v\n", r.TenantPerSecond, r.Client1PerSecond, r.Client2PerSecond)
}
