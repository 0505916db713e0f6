package sqlstore

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/riverqueue/river/riverdriver"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/docjobs/docjobs/internal/store"
)

// Migrate applies River's migrations, then docjobs' own (the NNN_name.sql
// files of Config.Migrations not yet recorded in docjobs_migrations), the
// latter in one transaction. It is safe to run at every start.
func (s *Store[TTx]) Migrate(ctx context.Context) error {
	migrator, err := rivermigrate.New(s.driver, &rivermigrate.Config{Logger: s.riverLogger, Schema: s.schema})
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	res, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil)
	if err != nil {
		return fmt.Errorf("river migrations: %w", err)
	}
	for _, v := range res.Versions {
		s.logger.InfoContext(ctx, "store: applied river migration", "version", v.Version, "name", v.Name)
	}

	files, err := migrationFiles(s.migrations)
	if err != nil {
		return err
	}
	return s.inTx(ctx, func(_ TTx, q Querier) error {
		if s.dialect.MigrationLock != "" {
			if _, err := s.exec(ctx, q, s.dialect.MigrationLock); err != nil {
				return fmt.Errorf("migration lock: %w", err)
			}
		}
		if _, err := s.exec(ctx, q, `CREATE TABLE IF NOT EXISTS docjobs_migrations (
			version INTEGER PRIMARY KEY,
			name TEXT NOT NULL,
			applied TEXT NOT NULL
		)`); err != nil {
			return fmt.Errorf("create migrations table: %w", err)
		}
		applied := map[int]string{}
		rows, err := s.query(ctx, q, `SELECT version, name FROM docjobs_migrations`)
		if err != nil {
			return fmt.Errorf("read migrations: %w", err)
		}
		for rows.Next() {
			var v int
			var name string
			if err := rows.Scan(&v, &name); err != nil {
				rows.Close()
				return fmt.Errorf("read migrations: %w", err)
			}
			applied[v] = name
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read migrations: %w", err)
		}
		if err := knowsEvery(applied, files); err != nil {
			return err
		}
		for _, m := range files {
			if _, ok := applied[m.version]; ok {
				continue
			}
			body, err := fs.ReadFile(s.migrations, m.path)
			if err != nil {
				return fmt.Errorf("read migration %s: %w", m.path, err)
			}
			if _, err := q.Exec(ctx, string(body)); err != nil {
				return fmt.Errorf("migration %s: %w", m.path, err)
			}
			if _, err := s.exec(ctx, q, `INSERT INTO docjobs_migrations (version, name, applied) VALUES (?, ?, ?)`,
				m.version, m.name, s.nowUTC().Format(TimeLayout)); err != nil {
				return fmt.Errorf("record migration %s: %w", m.path, err)
			}
			s.logger.InfoContext(ctx, "store: applied migration", "version", m.version, "name", m.name)
		}
		return nil
	})
}

// CheckSchema reads where the database's migrations stand against this
// binary's, River's and docjobs' own, and writes nothing: nil when none is
// missing, a *store.SchemaBehindError when some are (none at all: a new,
// empty database), ErrNewerSchema or ErrOtherSchema as Migrate would say.
// It is for the commands that must not upgrade a database older servers
// still use (Migrate makes them refuse it).
func (s *Store[TTx]) CheckSchema(ctx context.Context) error {
	migrator, err := rivermigrate.New(s.driver, &rivermigrate.Config{Logger: s.riverLogger, Schema: s.schema})
	if err != nil {
		return fmt.Errorf("river migrator: %w", err)
	}
	behind := &store.SchemaBehindError{}
	riverAll := migrator.AllVersions()
	for _, m := range riverAll {
		behind.RiverKnown = max(behind.RiverKnown, m.Version)
	}
	riverApplied, err := migrator.ExistingVersions(ctx)
	if err != nil {
		// River refuses versions it does not know: a newer River made them.
		return fmt.Errorf("%w: river migrations: %w", store.ErrNewerSchema, err)
	}
	for _, m := range riverApplied {
		behind.RiverApplied = max(behind.RiverApplied, m.Version)
	}
	files, err := migrationFiles(s.migrations)
	if err != nil {
		return err
	}
	for _, m := range files {
		behind.Known = max(behind.Known, m.version)
	}
	applied := map[int]string{}
	exists, err := s.driver.GetExecutor().TableExists(ctx, &riverdriver.TableExistsParams{Schema: s.schema, Table: "docjobs_migrations"})
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	if exists {
		rows, err := s.query(ctx, s.backend.DB(), `SELECT version, name FROM docjobs_migrations`)
		if err != nil {
			return fmt.Errorf("read migrations: %w", err)
		}
		for rows.Next() {
			var v int
			var name string
			if err := rows.Scan(&v, &name); err != nil {
				rows.Close()
				return fmt.Errorf("read migrations: %w", err)
			}
			applied[v] = name
			behind.Applied = max(behind.Applied, v)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read migrations: %w", err)
		}
	}
	if err := knowsEvery(applied, files); err != nil {
		return err
	}
	if len(applied) < len(files) || len(riverApplied) < len(riverAll) {
		return behind
	}
	return nil
}

// knowsEvery refuses a database that has migrations files does not hold, or
// holds under another name (ErrOtherSchema): a newer binary migrated it (a rollback, or an old process left in a rolling
// deploy), and this one would write its tables by rules the migrations
// changed, unnoticed, while reporting ready.
func knowsEvery(applied map[int]string, files []migrationFile) error {
	known := make(map[int]string, len(files))
	highest := 0
	for _, m := range files {
		known[m.version] = m.name
		highest = max(highest, m.version)
		if name, ok := applied[m.version]; ok && name != m.name {
			return fmt.Errorf("%w: its migration %d is %s, this binary's is %s; run the build that migrated it, or restore a backup from before",
				store.ErrOtherSchema, m.version, name, m.name)
		}
	}
	unknown := 0
	for v := range applied {
		if _, ok := known[v]; !ok && v > unknown {
			unknown = v
		}
	}
	if unknown == 0 {
		return nil
	}
	return fmt.Errorf("%w: it has migration %d (%s), this binary knows migrations up to %d; run a docjobs at least as new as the one that migrated it",
		store.ErrNewerSchema, unknown, applied[unknown], highest)
}

type migrationFile struct {
	version int
	name    string
	path    string
}

// migrationFiles lists NNN_name.sql files in version order.
func migrationFiles(fsys fs.FS) ([]migrationFile, error) {
	if fsys == nil {
		return nil, nil
	}
	paths, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	var out []migrationFile
	for _, p := range paths {
		base := strings.TrimSuffix(path.Base(p), ".sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name must be NNN_name.sql", p)
		}
		out = append(out, migrationFile{version: v, name: name, path: p})
	}
	slices.SortFunc(out, func(a, b migrationFile) int { return a.version - b.version })
	for i := 1; i < len(out); i++ {
		if out[i].version == out[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a version", out[i-1].path, out[i].path)
		}
	}
	return out, nil
}
