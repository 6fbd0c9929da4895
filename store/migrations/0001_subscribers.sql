-- 1: subscribers and their SQN state. record is the subscription as JSON
-- (store.Subscriber without its SQN); sqn is SQN_HE, the last SQN issued;
-- sqn_reserved bounds every SQN issued so far and is always durable
-- (see the package comment of store).
CREATE TABLE subscribers (
    supi         TEXT PRIMARY KEY,
    record       TEXT NOT NULL,
    sqn          BIGINT NOT NULL,
    sqn_reserved BIGINT NOT NULL,
    CHECK (sqn >= 0 AND sqn_reserved >= 0)
);

-- Small facts about the store itself, e.g. the boot the SQLite engine last
-- checked SQN_HE against.
CREATE TABLE store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
