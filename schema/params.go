package schema

import "errors"

// parseParametric parses a parametric type name (placeholder).
func parseParametric(string) (Type, error) { return "", errors.New("not parametric") }
