-- 2: the change feed. Every subscriber put or delete (not SQN updates)
-- adds a row in the same transaction, numbered by change_seq, a one-row
-- counter whose update serialises writers until they commit, so a reader
-- never sees change n+1 before change n. Running cores follow it to act on
-- changes other processes made (see Store.Changes).
CREATE TABLE change_seq (
    n BIGINT NOT NULL
);
INSERT INTO change_seq (n) VALUES (0);

CREATE TABLE subscriber_changes (
    seq     BIGINT PRIMARY KEY,
    supi    TEXT NOT NULL,
    deleted BOOLEAN NOT NULL
);
