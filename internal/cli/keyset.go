package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/docjobs/docjobs/internal/api"
	"github.com/docjobs/docjobs/internal/config"
	"github.com/docjobs/docjobs/internal/secret"
)

// checkKeyset refuses to start a process whose master keyset is not the
// one the database's secrets were sealed with. Each data dir makes its own
// keyset when none is given, so a second machine gets another one by
// default; it would start, report ready and then fail every job's provider
// keys (worker) or every create (API). The database's sealed request hash
// key is the witness: the first process to start stores it, every later
// one must open it.
func checkKeyset(ctx context.Context, cfg config.Config, keys api.ServiceKeys, sealer api.Sealer) error {
	_, err := api.RequestHashKey(ctx, keys, sealer)
	if errors.Is(err, secret.ErrOpen) {
		return fmt.Errorf("DOCJOBS_MASTER_KEY_FILE %s does not open the secrets of the database %s: they were sealed with another keyset. "+
			"Every process sharing the database needs the same keyset file: copy the first process's (by default each data dir makes its own)",
			cfg.MasterKeyFile, cfg.Database())
	}
	if err != nil {
		return fmt.Errorf("check DOCJOBS_MASTER_KEY_FILE against the database: %w", err)
	}
	return nil
}
