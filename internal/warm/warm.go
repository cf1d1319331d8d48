package warm

import (
	_ "github.com/chzyer/readline"
	_ "github.com/cockroachdb/pebble/v2"
	_ "github.com/cockroachdb/pebble/v2/vfs"
	_ "github.com/hashicorp/memberlist"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/prometheus/common/expfmt"
	_ "golang.org/x/time/rate"
	_ "google.golang.org/genproto/googleapis/rpc/errdetails"
	_ "google.golang.org/grpc"
	_ "google.golang.org/grpc/health"
	_ "google.golang.org/grpc/reflection"
	_ "google.golang.org/grpc/status"
	_ "google.golang.org/protobuf/proto"
	_ "gopkg.in/yaml.v3"
)
