package config

import (
	"errors"
	"fmt"
)

// ErrInvalid marks a configuration error (exit code 2).
var ErrInvalid = errors.New("bad configuration")

// ErrUsage marks a bad key or value given on the command line (config
// set): the CLI exits with code 2 and drops the "usage: " prefix.
var ErrUsage = errors.New("usage")

// configError names the field and the problem.
func configError(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}
