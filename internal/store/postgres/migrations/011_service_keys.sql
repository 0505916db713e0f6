-- Keys the service makes for itself, sealed with the master keyset (AEAD,
-- bound to the key's name), so that every process that shares the database
-- and the keyset uses the same one. The first is the key of the idempotency
-- request hash: a create's secrets enter that hash through HMAC under it,
-- never as a plain digest a copy of the database could be guessed against.
CREATE TABLE service_keys (
    name   TEXT PRIMARY KEY,
    sealed BYTEA NOT NULL
);
