-- The schema of a `vlab trace` database: lab/vlab/etrace/__init__.py SCHEMA, copied
-- (sim/tests/trace_db.rs checks that the two agree). Tests create databases from it.
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE vfs_ops (
  id INTEGER PRIMARY KEY, start_ns INTEGER, end_ns INTEGER, latency_ns INTEGER, op TEXT,
  pid INTEGER, tid INTEGER, comm TEXT, ino INTEGER, gen INTEGER, offset INTEGER, size INTEGER,
  ret INTEGER);
CREATE TABLE vfs_files (
  ino INTEGER, gen INTEGER, name TEXT, path TEXT, first_ns INTEGER, last_ns INTEGER, reads INTEGER,
  writes INTEGER, bytes_read INTEGER, bytes_written INTEGER, max_offset INTEGER,
  unlinked INTEGER, PRIMARY KEY (ino, gen));
CREATE TABLE block_ops (
  id INTEGER PRIMARY KEY, sector INTEGER, sectors INTEGER, op TEXT, rwbs TEXT,
  queue_ns INTEGER, insert_ns INTEGER, issue_ns INTEGER, complete_ns INTEGER,
  latency_ns INTEGER, error INTEGER, pid INTEGER, comm TEXT, bios INTEGER);
CREATE TABLE block_ops_by_file (
  block_op INTEGER REFERENCES block_ops(id), ino INTEGER, gen INTEGER, sectors INTEGER,
  PRIMARY KEY (block_op, ino, gen));
CREATE TABLE bios (
  id INTEGER PRIMARY KEY, block_op INTEGER REFERENCES block_ops(id), ns INTEGER, pid INTEGER,
  comm TEXT, sector INTEGER, sectors INTEGER, opf INTEGER, ino INTEGER, gen INTEGER,
  file_offset INTEGER);
CREATE INDEX vfs_ops_ino ON vfs_ops (ino, gen, start_ns);
CREATE INDEX vfs_ops_pid ON vfs_ops (pid);
CREATE INDEX block_ops_issue ON block_ops (issue_ns);
CREATE INDEX block_ops_sector ON block_ops (sector);
CREATE INDEX by_file_ino ON block_ops_by_file (ino, gen);
CREATE INDEX bios_ino ON bios (ino, gen, sector);
