package schema

import (
	"reflect"
	"strings"
	"testing"

	"github.com/kvnode/kvnode/cql"
)

// applyIn applies one statement at version (ts, "n1") on a node that knows the data centers dcs.
func applyIn(s *Schema, src string, ts int64, dcs ...string) (*Schema, error) {
	st, err := cql.ParseStatement(src)
	if err != nil {
		return nil, err
	}
	return s.Apply(st, "ks", Change{Version: Version{Timestamp: ts, Node: "n1"}, DataCenters: dcs})
}

// TestNetworkTopologyKeyspace: CREATE and ALTER KEYSPACE with NetworkTopologyStrategy keep a
// factor per data center (0s left out, the total as ReplicationFactor), expand the
// 'replication_factor' shortcut to the data centers the node knows and not over named ones,
// refuse a data center the cluster does not have (Cassandra 4.1's message), survive Encode and
// Decode, and describe themselves as CQL that recreates them.
func TestNetworkTopologyKeyspace(t *testing.T) {
	dcs := []string{"dc1", "dc2", "dc3"}
	s, err := applyIn(New(), `CREATE KEYSPACE ks WITH replication = {'class': 'org.apache.cassandra.locator.NetworkTopologyStrategy', 'dc2': '2', 'dc1': 3, 'dc3': 0}`, 10, dcs...)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := s.Keyspace("ks")
	if want := []DCFactor{{"dc1", 3}, {"dc2", 2}}; !reflect.DeepEqual(k.DataCenters, want) || k.ReplicationFactor != 5 {
		t.Fatalf("keyspace places %v, total %d; want %v, total 5", k.DataCenters, k.ReplicationFactor, want)
	}
	const desc = "CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 3, 'dc2': 2};"
	if got := k.CreateStatement(); got != desc {
		t.Errorf("CreateStatement = %s, want %s", got, desc)
	}
	d, err := Decode(s.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if dk, _ := d.Keyspace("ks"); !reflect.DeepEqual(dk.DataCenters, k.DataCenters) || d.Digest() != s.Digest() {
		t.Errorf("after Encode and Decode the keyspace places %v", dk.DataCenters)
	}
	if _, needs := s.FormatNeeds("ks", ""); len(needs) != 1 || needs[0].Format != FormatNTS {
		t.Errorf("FormatNeeds = %v, want NetworkTopologyStrategy at format %d", needs, FormatNTS)
	}

	// The shortcut keeps dc1's 3 (a data center the keyspace had), gives dc3 (which it had not) 1.
	s, err = applyIn(s, `ALTER KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'replication_factor': 1, 'dc2': 4}`, 11, dcs...)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ = s.Keyspace("ks"); !reflect.DeepEqual(k.DataCenters, []DCFactor{{"dc1", 3}, {"dc2", 4}, {"dc3", 1}}) || k.ReplicationFactor != 8 {
		t.Errorf("after ALTER with the shortcut the keyspace places %v, total %d", k.DataCenters, k.ReplicationFactor)
	}
	// An explicit map replaces the keyspace's: dc3, left out, places nothing.
	s, err = applyIn(s, `ALTER KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc1': 2, 'dc2': 2}`, 12, dcs...)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ = s.Keyspace("ks"); !reflect.DeepEqual(k.DataCenters, []DCFactor{{"dc1", 2}, {"dc2", 2}}) {
		t.Errorf("after ALTER with an explicit map the keyspace places %v", k.DataCenters)
	}
	s, err = applyIn(s, `ALTER KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}`, 13, dcs...)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ = s.Keyspace("ks"); k.DataCenters != nil || k.ReplicationFactor != 2 {
		t.Errorf("after ALTER to SimpleStrategy the keyspace places %v, total %d", k.DataCenters, k.ReplicationFactor)
	}
	if _, needs := s.FormatNeeds("ks", ""); len(needs) != 1 || needs[0].Format != FormatExpiring {
		t.Errorf("FormatNeeds of a SimpleStrategy keyspace altered = %v, want only ALTER KEYSPACE's format", needs)
	}

	// SimpleStrategy's factor becomes every data center's when the map names none.
	s, err = applyIn(s, `ALTER KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy'}`, 14, dcs...)
	if err != nil {
		t.Fatal(err)
	}
	if k, _ = s.Keyspace("ks"); !reflect.DeepEqual(k.DataCenters, []DCFactor{{"dc1", 2}, {"dc2", 2}, {"dc3", 2}}) {
		t.Errorf("after ALTER from SimpleStrategy 2 to a bare NetworkTopologyStrategy the keyspace places %v", k.DataCenters)
	}

	_, err = applyIn(New(), `CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'dc9': 3}`, 15, dcs...)
	if err == nil || !strings.Contains(err.Error(), "unrecognized strategy option {dc9} passed to NetworkTopologyStrategy") {
		t.Errorf("a data center the cluster does not have: %v", err)
	}
}

// TestDecodeDataCentersMalformed: a keyspace's data centers that Encode would not produce are
// refused, never a panic: out of order, a zero factor, or factors that do not add up.
func TestDecodeDataCentersMalformed(t *testing.T) {
	s, err := applyIn(New(), `CREATE KEYSPACE ks WITH replication = {'class': 'NetworkTopologyStrategy', 'a': 1, 'b': 2}`, 10, "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	good := s.Encode()
	for i := range len(good) {
		for _, delta := range []byte{1, 0xFF} {
			b := append([]byte(nil), good...)
			b[i] += delta
			if d, err := Decode(b); err == nil {
				if k, ok := d.Keyspace("ks"); ok && len(k.DataCenters) > 0 {
					sum := 0
					for j, f := range k.DataCenters {
						sum += f.RF
						if f.RF <= 0 || j > 0 && f.DC <= k.DataCenters[j-1].DC {
							t.Fatalf("byte %d changed: decoded data centers %v", i, k.DataCenters)
						}
					}
					if sum != k.ReplicationFactor {
						t.Fatalf("byte %d changed: data centers %v do not add up to %d", i, k.DataCenters, k.ReplicationFactor)
					}
				}
			}
		}
	}
}
