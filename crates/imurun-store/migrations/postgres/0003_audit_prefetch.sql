-- PostgreSQL's dialect of ../sqlite/0003_audit_prefetch.sql: the same tables, columns and constraints, with
-- PostgreSQL's spelling where the dialects differ (see ../README.md). A migration that has run
-- is never edited (sqlx checks its checksum): change the schema in a new file, in both folders.
ALTER TABLE audit DROP CONSTRAINT audit_source_check;
ALTER TABLE audit ADD CONSTRAINT audit_source_check
    CHECK (source IN ('model', 'user', 'prefetch') OR source LIKE 'agent:%');
