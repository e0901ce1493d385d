-- The attribution endpoint's tables in ClickHouse, schema version 3.
-- Written by `attribution-endpoint clickhouse schema`; the endpoint creates whatever is
-- missing itself when started with --clickhouse. Runs on ClickHouse 18.16 (Debian) and
-- on current releases. Read with FINAL (or argMax by (node, id)): a batch sent twice
-- leaves two copies of its rows until ClickHouse merges them.
-- No IP address, User-Agent or device identifier is ever exported.

CREATE DATABASE IF NOT EXISTS attribution;

CREATE TABLE IF NOT EXISTS attribution.schema_version
(
    `version` UInt32,
    `node` String,
    `applied_at` DateTime('UTC')
)
ENGINE = ReplacingMergeTree()
ORDER BY (version, node);

CREATE TABLE IF NOT EXISTS attribution.node_exports
(
    `node` String,
    `exported_at` DateTime('UTC'),
    `lag_seconds` Float64
)
ENGINE = ReplacingMergeTree(exported_at)
ORDER BY node;

CREATE TABLE IF NOT EXISTS attribution.pcm_reports
(
    `node` String,
    `id` UInt64,
    `received_at` DateTime('UTC'),
    `received_at_ms` UInt64,
    `protocol` String,
    `role` String,
    `site` String,
    `verdict` String,
    `reasons` Array(String),
    `campaign` String,
    `trigger_id` Nullable(UInt64),
    `source_engagement_type` String,
    `source_site` String,
    `source_id` Nullable(UInt8),
    `attributed_on_site` String,
    `trigger_data` Nullable(UInt8),
    `version` Nullable(UInt8),
    `source_token_key_id` String,
    `destination_token_key_id` String,
    `has_tokens` UInt8,
    `trigger_recorded_at_ms` Nullable(UInt64),
    `extra` String
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(received_at)
ORDER BY (node, id);

CREATE TABLE IF NOT EXISTS attribution.pcm_report_counts
(
    `node` String,
    `batch_first_id` UInt64,
    `batch_last_id` UInt64,
    `day` Int64,
    `role` String,
    `accepted` UInt8,
    `late` UInt8,
    `verified` UInt8,
    `has_tokens` UInt8,
    `quarantine_reasons` String,
    `source_site` String,
    `source_id` UInt8,
    `campaign` String,
    `attributed_on_site` String,
    `trigger_data` UInt8,
    `delay_bucket` Int64,
    `records` UInt64
)
ENGINE = ReplacingMergeTree(batch_last_id)
ORDER BY (`node`, `batch_first_id`, `day`, `role`, `accepted`, `late`, `verified`, `has_tokens`, `quarantine_reasons`, `source_site`, `source_id`, `campaign`, `attributed_on_site`, `trigger_data`, `delay_bucket`);

CREATE TABLE IF NOT EXISTS attribution.pcm_triggers
(
    `node` String,
    `id` UInt64,
    `received_at` DateTime('UTC'),
    `received_at_ms` UInt64,
    `site` String,
    `trigger_data` UInt8,
    `priority` UInt8,
    `attribution_source` Nullable(String),
    `extra` String
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(received_at)
ORDER BY (node, id);

CREATE TABLE IF NOT EXISTS attribution.postbacks
(
    `node` String,
    `id` UInt64,
    `received_at` DateTime('UTC'),
    `received_at_ms` UInt64,
    `protocol` String,
    `site` String,
    `verdict` String,
    `reasons` Array(String),
    `signature` String,
    `test_key` String,
    `kid` String,
    `unsigned_fields` Array(String),
    `schema_version` Nullable(UInt16),
    `schema_ambiguous_versions` String,
    `duplicate_key` String,
    `content_hash` UInt64,
    `version` String,
    `ad-network-id` String,
    `campaign-id` Nullable(UInt32),
    `source-identifier` String,
    `app-id` Nullable(UInt64),
    `transaction-id` String,
    `redownload` Nullable(UInt8),
    `source-app-id` Nullable(UInt64),
    `source-domain` String,
    `fidelity-type` Nullable(UInt8),
    `did-win` Nullable(UInt8),
    `postback-sequence-index` Nullable(UInt8),
    `ad-network-identifier` String,
    `advertised-item-identifier` Nullable(UInt64),
    `conversion-type` String,
    `postback-identifier` String,
    `impression-type` String,
    `marketplace-identifier` String,
    `publisher-item-identifier` Nullable(UInt64),
    `conversion-value` Nullable(UInt8),
    `coarse-conversion-value` String,
    `ad-interaction-type` String,
    `country-code` String,
    `attribution-signature` String,
    `jws-string` String,
    `extra` String
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(received_at)
ORDER BY (node, id);

CREATE TABLE IF NOT EXISTS attribution.postback_retries
(
    `node` String,
    `id` UInt64,
    `received_at` DateTime('UTC'),
    `received_at_ms` UInt64,
    `protocol` String,
    `retry_of` UInt64,
    `extra` String
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(received_at)
ORDER BY (node, id);

CREATE TABLE IF NOT EXISTS attribution.apple_ads_tokens
(
    `node` String,
    `id` UInt64,
    `received_at` DateTime('UTC'),
    `received_at_ms` UInt64,
    `site` String,
    `extra` String
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(received_at)
ORDER BY (node, id);

CREATE TABLE IF NOT EXISTS attribution.apple_ads_calls
(
    `node` String,
    `id` UInt64,
    `received_at` DateTime('UTC'),
    `received_at_ms` UInt64,
    `token_id` UInt64,
    `called` UInt8,
    `http_status` Nullable(UInt16),
    `status` String,
    `next_attempt` Nullable(DateTime('UTC')),
    `attribution` Nullable(UInt8),
    `orgId` Nullable(Int64),
    `campaignId` Nullable(Int64),
    `adGroupId` Nullable(Int64),
    `keywordId` Nullable(Int64),
    `adId` Nullable(Int64),
    `conversionType` String,
    `claimType` String,
    `countryOrRegion` String,
    `clickDate` String,
    `impressionDate` String,
    `supplyPlacement` String,
    `extra` String
)
ENGINE = ReplacingMergeTree()
PARTITION BY toYYYYMM(received_at)
ORDER BY (node, id);

INSERT INTO attribution.schema_version (version, node, applied_at) VALUES (3, 'schema.sql', now());
