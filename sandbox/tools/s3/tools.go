//go:build tools

// Package tools pins the S3-compatible server the sandbox runs (versitygw, POSIX backend).
package tools

import (
	_ "github.com/versity/versitygw/cmd/versitygw"
)
