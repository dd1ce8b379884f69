package agentread

import (
	"os"
	"testing"

	"github.com/gemkit/gemkit/internal/gemkittest"
)

func TestMain(m *testing.M) { os.Exit(gemkittest.Main(m)) }
