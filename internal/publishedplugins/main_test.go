package publishedplugins

import (
	"os"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

// TestMain builds gemkit once for the switched rows (gemkittest.Gemkit).
func TestMain(m *testing.M) { os.Exit(gemkittest.Main(m)) }
