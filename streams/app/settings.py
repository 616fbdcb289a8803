"""Every knob of memstream, typed, read from the environment with the seed's default.

The names follow the source notes (seeds 000-004) where they name a knob; docs/configuration.md lists them all,
generated from this module (`python -m streams.app.settings_docs`).
"""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Literal

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    """Service settings. Each field is read from the environment variable of the same name."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore")

    # --- broker, app, storage -------------------------------------------------------------
    kafka_broker_url: str | None = Field(
        None, description="Kafka bootstrap servers (host:port,...). Unset: start the embedded broker."
    )
    app_id: str = Field("memstream", description="Faust app id (consumer group, table prefix).")
    topic_partitions: int = Field(4, ge=1, description="Partition count of every topic.")
    data_dir: Path = Field(Path(".memstream"), description="RocksDB tables and worker state.")
    web_host: str = Field("127.0.0.1", description="Host the worker's web server binds and advertises.")
    web_port: int = Field(6066, description="Port of the worker's web server (query API, /metrics).")
    embedded_broker_port: int = Field(9092, description="Port of the embedded broker.")
    log_level: str = Field("info", description="The project's log level; libraries (Faust, Kafka, "
                           "the model's tools) log at WARNING unless it is debug.")
    table_store: str = Field("rocksdb://", description="Faust table store (rocksdb:// or memory://).")
    kafka_one_record_batches: bool = Field(
        False,
        description="Produce one record per batch (slow). Only for a broker whose ListOffsets "
        "answer is wrong after multi-record batches and whose fetch high watermark is wrong too; "
        "the embedded Tansu broker's low answer is corrected from a fetch (streams/app/highwaters.py).",
    )

    kafka_producer_linger_ms: int = Field(
        10, ge=0, le=1000,
        description="How long a worker's producer waits to fill a batch before sending it. A "
        "turn makes about a dozen records (changelogs, events, progress): a few ms puts them "
        "in a few requests instead of one each (the embedded broker used a quarter less CPU "
        "per turn at 10 ms); it adds at most this much per topic a turn crosses.",
    )
    kafka_fetch_max_wait_ms: int = Field(
        100, ge=1, le=1500,
        description="Longest a worker's fetch waits for records. The embedded broker answers a "
        "fetch only when this wait is over, so it adds up to this much per topic a turn crosses; "
        "Faust's own default is 1500.",
    )

    # --- Kafka security (streams/app/kafka_security.py; docs/kafka-security.md) ----------------
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        "PLAINTEXT",
        description="How memstream's Kafka clients (the worker, topic creation, `memstream send` "
        "and `replay`, the bench, the client library) talk to KAFKA_BROKER_URL: SSL is TLS, "
        "SASL_SSL TLS plus a SASL login (MSK, Confluent Cloud, Aiven: docs/kafka-security.md). "
        "The embedded broker speaks PLAINTEXT only.",
    )
    kafka_sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"] = Field(
        "PLAIN", description="SASL mechanism with SASL_PLAINTEXT or SASL_SSL. PLAIN and SCRAM "
        "log in with KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD; OAUTHBEARER with the tokens of "
        "KAFKA_SASL_OAUTH_TOKEN_PROVIDER.",
    )
    kafka_sasl_username: str | None = Field(None, description="SASL user name (PLAIN, SCRAM).")
    kafka_sasl_password: SecretStr | None = Field(None, description="SASL password (PLAIN, SCRAM).")
    kafka_sasl_oauth_token_provider: str | None = Field(
        None, description="With OAUTHBEARER: `module:attribute` of an aiokafka "
        "AbstractTokenProvider (a class or factory called without arguments, or an instance), "
        "e.g. one returning MSK IAM tokens (docs/kafka-security.md).",
    )
    kafka_ssl_cafile: Path | None = Field(
        None, description="PEM file of the CA certificates that sign the brokers' certificates; "
        "unset: the system's CAs (enough for MSK, Confluent Cloud).",
    )
    kafka_ssl_certfile: Path | None = Field(
        None, description="PEM client certificate (mutual TLS, e.g. Aiven, MSK with TLS client "
        "authentication); with KAFKA_SSL_KEYFILE unless the key is in this file.",
    )
    kafka_ssl_keyfile: Path | None = Field(None, description="PEM private key of KAFKA_SSL_CERTFILE.")
    kafka_ssl_key_password: SecretStr | None = Field(
        None, description="Password of an encrypted KAFKA_SSL_KEYFILE.",
    )
    kafka_connect_timeout_seconds: float = Field(
        15.0, gt=0, description="Longest the connection check before a worker, topic admin or "
        "client starts may take (TCP, TLS handshake, SASL login); past it, or on a refused "
        "certificate or login, it fails with BrokerConnectionError saying which step failed.",
    )

    # --- input limits --------------------------------------------------------------------
    max_turn_chars: int = Field(8000, ge=1, description="Longer turn texts go to the DLQ.")
    max_record_bytes: int = Field(262144, ge=1, description="Larger raw records go to the DLQ.")
    dlq_max_raw_bytes: int = Field(
        262144, ge=1024, le=700_000,
        description="Bytes of a record a dead letter keeps at most; a larger record keeps its first "
        "bytes, marked raw_truncated, with its size and HMAC (a dead letter must fit the "
        "producer's 1 MB request limit, and base64 adds a third).",
    )
    max_future_skew_seconds: int = Field(
        3600, ge=0,
        description="A turn dated further ahead of the worker's clock is dead-lettered "
        "(future_event_time): it would move the user's clock, and every age computed from it, "
        "forward for good.",
    )

    # --- seed 004 toggles ------------------------------------------------------------------
    memory_enabled: bool = Field(True, description="Master switch: no memories are written when false.")
    semantic_enabled: bool = Field(True, description="Write semantic memories.")
    episodic_enabled: bool = Field(True, description="Write episodic memories.")
    buffer_turns: int = Field(8, ge=1, description="Per-thread buffer of recent turns.")
    memory_k: int = Field(3, ge=1, description="Default top-k of a query.")
    memory_cap: int = Field(
        200, ge=1, description="Active semantic memories per user at most (seed 004); the lifecycle "
        "archives the lowest decay weight, then the least recently used, never a pinned one (the "
        "archive is the cold tier: searchable, restorable).",
    )

    # --- trigger / extraction ---------------------------------------------------------------
    trigger_confidence_min: float = Field(0.6, description="Confidence at which a candidate is emitted.")
    trigger_budget_ms: int = Field(250, description="Time budget of an LLM trigger call.")
    max_facts_per_turn: int = Field(3, ge=1, le=5, description="Facts extracted per turn at most.")
    summary_max_chars: int = Field(280, description="Longest memory summary.")
    sensitive_categories: str = Field(
        "health,religion,politics,address",
        description="Sensitive data kinds not stored unless the user explicitly asks (seed 004).",
    )
    memory_tiny_llm_model_id: str | None = Field(
        None, description="Overrides the LLM provider's model id (seed 002 name); unset: provider default."
    )

    # --- dedup bands (seed 002; per embedder profile, see streams/providers/embedders/profiles.py) ----------------
    semantic_auto_update: float | None = Field(None, description="Override of the profile's auto band.")
    semantic_check_low: float | None = Field(None, description="Override of the profile's check band.")
    episodic_auto_update: float | None = Field(None, description="Override (episodic auto band).")
    episodic_check_low: float | None = Field(None, description="Override (episodic check band).")
    episodic_merge_window_hours: int = Field(72, description="Episodic merges only within this window.")
    memory_neighbors_k: int = Field(10, description="Neighbours searched during dedup.")
    memory_enable_entity_heuristics: bool = Field(True, description="Same-fact check without an LLM.")
    memory_write_rate_limit_per_hour: int = Field(
        20, ge=0, description="New semantic memories per user per event-time hour (seed 002); past it a new fact is still "
        "stored but down-ranked (one importance level lower, tag over_write_budget); corrections and updates are "
        "never limited. 0: no limit.",
    )
    link_min: float = Field(0.6, description="Neighbours at or above this score become related_to edges.")

    # --- episodic capture (seed 003) -----------------------------------------------------------
    episodic_cooldown_turns: int = Field(3, description="Turns between episodic captures at least.")
    episodic_cooldown_minutes: int = Field(10, description="Minutes between episodic captures at least.")
    episodic_max_per_day: int = Field(5, description="Episodic memories per user and day at most.")
    episodic_window_n: int = Field(10, description="Messages summarised into an episode.")

    # --- retrieval (docs/architecture.md#read-path) ----------------------------------------------------------------
    memory_context_topk: int = Field(24, description="Candidates considered before ranking.")
    rank_w_similarity: float = Field(0.55, description="Ranking weight of cosine similarity.")
    rank_w_importance: float = Field(0.10, description="Ranking weight of (importance - 1) / 4.")
    rank_w_recency: float = Field(0.05, description="Ranking weight of the recency decay.")
    rank_w_pinned: float = Field(0.10, description="Ranking weight of being pinned.")
    rank_w_related: float = Field(0.05, description="Ranking weight of the strongest related edge.")
    rank_relevance_norm: Literal["raw", "pool"] = Field(
        "pool",
        description="Scale of the ranking's similarity term. pool: the candidates' relevance "
        "stretched to [0, 1] (best 1, worst 0), like the importance, recency and pinned terms; "
        "raw: the relevance as retrieved (whose spread over the candidates is ~0.3, so the "
        "other terms outweigh it).",
    )
    rank_diversity: float = Field(
        0.2, ge=0.0, le=1.0,
        description="Maximal marginal relevance: each next item of an answer is ranked by its score "
        "minus this times its highest cosine to the items above it, so paraphrases of one fact do "
        "not fill the answer; 0 ranks by score alone.",
    )
    rank_relevance_min_spread: float = Field(
        0.3, gt=0.0, le=1.0, description="With RANK_RELEVANCE_NORM=pool, the smallest spread of "
        "the candidates' relevance that is stretched to [0, 1] (near-equal candidates stay near-equal).",
    )
    retrieval_mode: Literal["dense", "hybrid"] = Field(
        "hybrid",
        description="dense: the similarity term is the cosine alone. hybrid: the cosine fused "
        "with BM25 over the user's searchable memories' summaries, entities and days said "
        "(stemmed; an inverted index per user, updated in place), see RETRIEVAL_FUSION.",
    )
    retrieval_fusion: Literal["blend", "rrf"] = Field(
        "blend",
        description="Hybrid fusion. blend: RETRIEVAL_DENSE_WEIGHT x cosine + the rest x BM25 / "
        "the best BM25 among the rows the query may return. rrf: reciprocal rank fusion "
        "(k = RETRIEVAL_RRF_K), scaled so first in both rankings is 1.",
    )
    retrieval_dense_weight: float = Field(
        0.7, ge=0.0, le=1.0, description="Weight of the cosine in the blend fusion (the rest is BM25's).",
    )
    retrieval_rrf_k: int = Field(60, ge=1, description="k of reciprocal rank fusion (60 as in its paper).")
    retrieval_window_boost: float = Field(
        0.1, ge=0.0, le=1.0,
        description="Added to the relevance of memories said on, or mentioning, a day inside the "
        "time window a query names (\"in May 2023\", \"last week\"); 0 turns it off.",
    )
    query_max_top_k: int = Field(100, description="Largest top_k a query may ask for.")
    categories_path: Path | None = Field(
        None, description="Categories YAML (seed 001 §5: categories, context modes, per-agent "
        "allowlists); unset: the repository's categories.yaml.",
    )
    query_episodic_max: int = Field(
        3, ge=1, description="Episodic items in a query answer at most (one is kept for them when "
        "top_k >= 2 and one matches), unless the query has recall intent.",
    )
    query_recall_episodic: int = Field(
        3, ge=1, description="Episodic items kept for a query with recall intent (\"what did we "
        "discuss last week\"); the rest of top_k may be episodic too.",
    )
    query_max_budget_tokens: int = Field(32768, ge=1, description="Largest budget_tokens a query may ask for.")

    # --- lifecycle (docs/architecture.md#write-path) ------------------------------------------------------------------
    ttl_days: int = Field(60, description="Days without access before a TTL soft-delete.")
    ttl_importance_max: int = Field(
        1, ge=0, le=5, description="Only memories this unimportant are TTL-deleted, then purged: "
        "1 is small talk (streams/write/importance.py); 0 turns the TTL off.")
    purge_after_days: int = Field(30, description="Days from soft-delete to purge.")
    archive_weight_min: float = Field(
        0.05, ge=0.0, description="Decay weight (seed 000 §6) under which an unused memory is archived.",
    )
    archive_unused_days: int = Field(
        30, ge=0, description="Days without access before a memory may be archived for its decay weight.",
    )
    archive_retention_days: int | None = Field(
        None, ge=1, description="A retention window: days an archived memory (decayed, over the cap, "
        "or an original a consolidation replaced) is kept before it is soft-deleted, then purged "
        "after PURGE_AFTER_DAYS. Unset (the default): the archive is kept, searchable, until the "
        "user or an operator removes it (docs/decisions.md; seed 000 §6 suggests 180).")
    lifecycle_enabled: bool = Field(
        True, description="Run the lifecycle passes (forgetting, promotion, consolidation, "
        "insights, consent expiry) after each dedup record.")
    lifecycle_period_hours: int = Field(
        24, ge=1, description="Event-time hours between two lifecycle runs for one user.",
    )
    lifecycle_users_per_record: int = Field(
        2, ge=1, description="Idle users whose lifecycle one processed record may run (bounds the "
        "work a record adds to its partition).",
    )
    lifecycle_max_changes: int = Field(
        100, ge=1, description="Transitions one lifecycle pass makes for one user per run at most; "
        "the rest wait for the next run.",
    )

    # --- consent (seed 001 §10) ------------------------------------------------------------------
    consent_enabled: bool = Field(
        True, description="Changes of sensitive profile fields (preferred name, pronouns, city, "
        "language) wait for the user's consent; changes of benign ones (tone, goals) for a "
        "second statement or a trusted source. false: every change applies at once.",
    )
    consent_proposal_days: float = Field(
        7.0, gt=0, description="Event-time days a proposed profile change waits for consent before it expires.")
    consent_ack_window_minutes: float = Field(
        30.0, gt=0, description="A chat acknowledgement (\"yes, update it\") answers the thread's "
        "proposal made at most this many event-time minutes before.",
    )
    consent_trusted_confidence: float = Field(
        1.0, ge=0.0, le=1.0, description="A benign profile change this confident (1.0: an explicit "
        "\"remember …\") applies without corroboration, as does one from an external source.",
    )

    # --- embeddings ------------------------------------------------------------------------------
    embedder: str = Field(
        "local-int8",
        description="local: all-MiniLM-L6-v2 in fp32 through sentence-transformers (the "
        "reference). local-int8 (default): the same model on ONNX Runtime with int8 weights (3-4x the "
        "texts/s of local in batches, 13x+ one at a time; cosine 0.99 to local's vectors; LoCoMo "
        "recall within 0.6 points). local-onnx: fp32 on ONNX Runtime (local's vectors; faster one "
        "at a time only). bedrock: Amazon Titan Text Embeddings V2 through Bedrock (production; "
        "BEDROCK_EMBED_*). Each has its own dedup bands; switching keeps the vectors already stored.",
    )
    embedder_cache_dir: Path | None = Field(
        None, description="Where local-onnx/local-int8 keep the ONNX file they make on first load "
        "(written once, atomically, so workers may share it); unset: DATA_DIR/models.",
    )
    embed_batch_size: int = Field(32, description="Texts embedded per model call.")
    embedder_thread_spinning: bool = Field(
        False,
        description="Let the ONNX embedders' threads spin-wait between model calls (ONNX "
        "Runtime's default). Fastest for the model alone, but in a worker the spinning threads "
        "take the core its event loop needs: off, a 2-core worker draining a backlog used a "
        "quarter less CPU and drained a quarter more turns/s.",
    )
    embedder_threads: int | None = Field(
        None, ge=1, le=64,
        description="Threads of one ONNX model run; unset: the machine's cores, at most 4.",
    )
    ingest_batch_size: int = Field(
        32, ge=1, description="Turns ingest takes at once (their candidates embedded in one call).")
    ingest_batch_within_ms: int = Field(
        5, ge=1, description="Longest wait to fill an ingest batch (added to a lone turn's latency).")
    dedup_batch_size: int = Field(64, ge=1, description="Candidates dedup takes (and embeds) at once.")
    dedup_batch_within_ms: int = Field(20, ge=1, description="Longest wait to fill a dedup batch.")

    # --- proactivity (seed 000 §11) ------------------------------------------------------------
    proactivity_enabled: bool = Field(True, description="Send proactivity candidates to memory.proactivity.")
    proactivity_min_weight: float = Field(
        0.55, ge=0, le=1, description="Least proactivity_weight of a memory worth reaching out about.")
    proactivity_min_trust: float = Field(
        0.6, ge=0, le=1, description="Least trust_score of a memory worth reaching out about.")
    proactivity_max_per_day: int = Field(
        2, ge=0, description="Proactivity candidates per user per event-time day, at most.")
    proactivity_min_interval_hours: float = Field(
        6.0, gt=0, description="Least event time between two candidates of a user; doubled per "
        "candidate reported ignored in a row (proactivity_feedback), up to 30 days.")

    # --- AWS (seed 002) ---------------------------------------------------------------------------
    aws_region: str = Field("us-east-1", description="AWS region of S3 Vectors and Bedrock.")
    s3v_bucket: str = Field("memstream-vectors", description="S3 Vectors bucket.")
    s3v_index_memory: str = Field("memory-search", description="S3 Vectors index of all users.")
    s3v_distance: str = Field("cosine", description="Distance metric of the index.")
    bedrock_embed_model_id: str = Field("amazon.titan-embed-text-v2:0", description="Bedrock embedding model.")
    bedrock_embed_dimensions: Literal[256, 512, 1024] = Field(
        1024, description="Output dimension of Titan V2 (EMBEDDER=bedrock); the S3 Vectors index "
        "has the embedder's dimension (local kinds 384), so changing it needs a new index.",
    )
    bedrock_embed_concurrency: int = Field(
        8, ge=1, le=64, description="Titan calls in flight at once per worker (Titan embeds one "
        "text per call; a batch runs its calls on a pool this large).",
    )
    bedrock_embed_connect_timeout_seconds: float = Field(2.0, gt=0, description="Connect timeout of one Titan call.")
    bedrock_embed_read_timeout_seconds: float = Field(10.0, gt=0, description="Read timeout of one Titan call.")
    bedrock_embed_attempts: int = Field(
        4, ge=1, le=10, description="Attempts per text on throttling, 5xx and timeouts (botocore's "
        "own retries are off), with exponential backoff and full jitter.",
    )
    bedrock_embed_backoff_initial_ms: int = Field(100, ge=1, description="Scale of the first Titan retry backoff.")
    bedrock_embed_backoff_max_ms: int = Field(5000, ge=1, description="Longest Titan retry backoff.")

    # --- tiny LLM (docs/architecture.md#write-path, §6): trigger, classifier, same-fact; rules when none -----------------
    llm_provider: Literal["auto", "anthropic", "bedrock", "none"] = Field(
        "auto",
        description="auto: Anthropic when ANTHROPIC_API_KEY is set, else rules; anthropic, bedrock "
        "or none (rules) to choose explicitly.",
    )
    anthropic_api_key: SecretStr | None = Field(None, description="Anthropic API key; never logged.")
    anthropic_base_url: str | None = Field(None, description="Anthropic API base URL (proxies, tests).")
    anthropic_model: str = Field(
        "claude-haiku-4-5",
        description="Anthropic model. Not claude-3-5-haiku-latest: it reached end-of-life on 19 Feb 2026.",
    )
    bedrock_model_id: str = Field("amazon.nova-micro-v1:0", description="Bedrock Converse model id.")
    llm_extract_budget_ms: int = Field(2000, ge=1, description="Time budget of an LLM classifier call.")
    llm_same_fact_budget_ms: int = Field(1500, ge=1, description="Time budget of an LLM same-fact call.")
    llm_lifecycle_budget_ms: int = Field(
        10000, ge=1, description="Time budget of a background LLM call (consolidation summary, "
        "theory-of-mind insights); never on the hot path.",
    )
    llm_max_retries: int = Field(
        2, ge=0, description="Retries of classifier and same-fact calls within their budget; the "
        "trigger never retries.",
    )

    # --- consolidation, promotion, insights (streams/lifecycle/, seeds 000 §4 §7, 001 §3 §4) ------
    consolidation_window_days: int = Field(
        7, ge=1, description="Episodes clustered into one consolidated memory lie within this "
        "many days of each other.",
    )
    consolidation_lookback_days: int = Field(90, ge=1, description="Age of the oldest episode consolidation considers.")
    consolidation_min_similarity: float = Field(
        0.6, ge=0.0, le=1.0, description="Cosine at which two episodes may share a cluster "
        "(calibrated on all-MiniLM-L6-v2: episodes of one theme score 0.6-0.9).",
    )
    consolidation_max_candidates: int = Field(200, ge=2, description="Most recent episodes one consolidation run reads per user.")
    consolidation_max_pairs: int = Field(
        50, ge=1, description="Episode pairs one consolidation run checks per user (seed 001 §4: ≤ 50/day).",
    )
    consolidation_max_clusters: int = Field(10, ge=1, description="Consolidated memories one run makes per user.")
    consolidation_max_cluster_size: int = Field(8, ge=2, description="Episodes one consolidated memory merges at most.")
    consolidation_fingerprint_days: int = Field(
        14, ge=1, description="Days a checked pair that was not merged is not checked again.",
    )
    promotion_min_repeats: int = Field(3, ge=2, description="Mentions of one fact among episodes that promote it to semantic.")
    promotion_window_days: int = Field(60, ge=1, description="The mentions must fall within this many days.")
    promotion_min_similarity: float = Field(
        0.85, ge=0.0, le=1.0, description="Cosine at which two episodic memories state the same fact "
        "(all-MiniLM-L6-v2: repeats of one fact score 0.9+, distinct events of one trip 0.75-0.85).",
    )
    promotion_canonical_similarity: float = Field(
        0.75, ge=0.0, le=1.0, description="Cosine at which a pinned or user-set semantic fact is on "
        "the same subject as a promotion, which it then prevents.",
    )
    promotion_min_trust: float = Field(0.7, ge=0.0, le=1.0, description="Mean trust the mentions need.")
    promotion_review_below: float = Field(
        0.9, ge=0.0, le=1.0, description="A promotion less confident than this is tagged needs_review (seed 000 §7).",
    )
    promotion_pattern_lift: float = Field(
        0.22, ge=0.0, le=2.0,
        description="A pattern (episodes that share a topic word, e.g. three pottery classes) is "
        "promoted when their mean pairwise cosine exceeds their mean cosine to the user's other "
        "episodes by this; below it the shared word is generic ('went', 'photo': 0.06-0.19 on "
        "the LoCoMo dev set, topics 0.25-0.54). Calibrated for MiniLM.")
    promotion_max_per_run: int = Field(5, ge=1, description="Semantic memories one promotion run makes per user.")
    insight_interval_hours: int = Field(
        24, ge=1, description="Event-time hours between two theory-of-mind runs of a user (needs an LLM).",
    )
    insight_activity_items: int = Field(5, ge=1, le=20, description="Recent episodes an insight run reads.")
    insight_semantic_items: int = Field(3, ge=0, le=20, description="New semantic memories an insight run reads.")
    rank_w_consolidated: float = Field(
        0.05, ge=0.0, description="Ranking bonus of a consolidated memory (queries prefer them to episodes).",
    )
    rank_w_insight: float = Field(
        0.10, ge=0.0, description="Ranking penalty of an insight (surfaced with low weight, seed 001 §3).",
    )
    rank_w_archived: float = Field(
        0.02, ge=0.0, description="Ranking penalty of an archived memory (the cold tier): it ranks "
        "below an active one that matches as well.",
    )
    query_threshold: float | None = Field(
        0.02, ge=0.0, le=1.0, description="The threshold of a bullets answer whose request sets "
        "none: items scoring lower (a score is the probability that the item answers the query, "
        "streams/read/calibration.py) are left out, but for categories with context all. Full "
        "answers (inspection, evaluation) apply only a threshold the request sets.",
    )
    cold_tier_similarity: float = Field(
        0.6, ge=-1.0, le=1.0, description="A query reaches into the archive by itself when fewer "
        "than top_k active memories have at least this cosine similarity (the active results are "
        "weak), or when it points to the past (recall intent, a time phrase).",
    )

    # --- privacy (streams/privacy/): per-user data keys, wrapped by the master key ------------------
    memstream_master_key: SecretStr | None = Field(
        None, description="Master key (32 bytes, url-safe base64; `memstream keys master` makes "
        "one) that wraps every user's data key; the same on every worker, never logged, never in "
        "Kafka. Required by `memstream worker`; `memstream run` makes one per data dir. During a "
        "rotation a comma-separated list (NEW,OLD): the first wraps, any unwraps "
        "(docs/privacy.md).",
    )
    master_key_file: Path | None = Field(
        None, description="File holding the master key (instead of MEMSTREAM_MASTER_KEY).",
    )

    # --- auth, registry, SSE (streams/api/: auth.py, registry.py, sse.py) ------------------------
    memstream_api_keys: str | None = Field(
        None, description="API keys the worker accepts, as a JSON list of {agent_id, role "
        "(agent|admin|metrics), sha256 (hex of the key), users (optional list)}; `memstream keys new` "
        "prints an entry. Only hashes, never keys.",
    )
    api_keys_file: Path | None = Field(
        None, description="File with more key entries (the same JSON list, or YAML); re-read "
        "when it changes, so a key removed from it stops working without a restart.",
    )
    memstream_api_key: SecretStr | None = Field(
        None, description="The key the CLI and clients send (default: DATA_DIR/admin-api-key, "
        "written by `memstream run`).",
    )
    command_wait_max_seconds: float = Field(
        10.0, gt=0, description="Longest a registry write with ?wait=1 waits for its command.",
    )
    sse_replay_events: int = Field(
        50, ge=1, description="Recent events kept per user for SSE Last-Event-ID reconnects (a "
        "batch writes only its own events to the table's changelog, a purge the stored batches "
        "it reaches; a change of this size rewrites the buffer once).",
    )
    sse_batch_size: int = Field(
        256, ge=1, description="memory.events records the SSE buffer takes at once (one buffer "
        "write per user per batch).")
    sse_batch_within_ms: int = Field(20, ge=1, description="Longest wait to fill an SSE batch.")
    sse_ping_seconds: float = Field(15.0, gt=0, description="SSE keep-alive comment interval.")
    sse_queue_events: int = Field(
        1000, ge=1, description="Events buffered per SSE client; a client that falls further "
        "behind is disconnected and resumes with Last-Event-ID.",
    )
    sse_max_streams: int = Field(
        1000, ge=1, description="Event streams (SSE connections) one worker serves at once; one "
        "more is a 429.",
    )
    sse_max_streams_per_user: int = Field(
        8, ge=1, description="Event streams of one user a worker serves at once; one more is a 429.",
    )
    api_rate_per_second: float = Field(
        0.0, ge=0, description="Requests a second one API key may make to one worker, on average "
        "(a token bucket per key, streams/api/limits.py); past it a request is answered 429 with "
        "Retry-After and does nothing. 0: no limit.",
    )
    api_rate_burst: int = Field(
        20, ge=1, description="Requests one API key may make at once before API_RATE_PER_SECOND "
        "applies (the bucket's size).",
    )
    api_max_body_bytes: int = Field(
        1048576, ge=1, description="Largest request body the API reads; a larger one is a 413.",
    )

    # --- observability ---------------------------------------------------------------------------
    metrics_lag_interval_seconds: float = Field(
        5.0, gt=0, description="How often a worker refreshes memstream_consumer_lag_records.",
    )

    # --- sinks (sinks/, agents/sinks.py): none configured, none runs ------------------------------
    opensearch_url: str | None = Field(
        None, description="OpenSearch URL of the audit/events sink; unset: the OpenSearch sink is off.",
    )
    opensearch_index_prefix: str = Field(
        "memstream", description="Prefix of the sink's indices (<prefix>-events-YYYY.MM, <prefix>-audit-YYYY.MM).",
    )
    opensearch_timeout_seconds: float = Field(10.0, gt=0, description="Timeout of one OpenSearch request.")
    s3vectors_bucket: str | None = Field(
        None, description="S3 Vectors bucket of the vectors sink (overrides S3V_BUCKET); unset "
        "(or S3VECTORS_INDEX unset): the S3 Vectors sink is off.",
    )
    s3vectors_index: str | None = Field(
        None, description="S3 Vectors index of the vectors sink (overrides S3V_INDEX_MEMORY).",
    )
    sink_batch_size: int = Field(200, ge=1, description="Records a sink writes per batch at most.")
    sink_batch_max_age_ms: int = Field(500, ge=0, description="Longest a record waits for its batch to fill.")
    sink_buffer_records: int = Field(
        2000, ge=1, description="Records a sink holds unwritten at most; then the sink agent waits "
        "(backpressure) and the consumer pauses. At least SINK_BATCH_SIZE.",
    )
    sink_retry_attempts: int = Field(
        6, ge=1, description="Attempts of a batch write on transient errors before its records "
        "go to memory.sinks.dlq.",
    )
    sink_retry_initial_ms: int = Field(100, ge=1, description="First retry backoff; doubles per attempt, plus jitter.")
    sink_retry_max_ms: int = Field(5000, ge=1, description="Longest retry backoff.")

    @property
    def broker_is_embedded(self) -> bool:
        return not self.kafka_broker_url

    @property
    def broker_url(self) -> str:
        """The bootstrap servers actually used (embedded broker when none is configured)."""
        return self.kafka_broker_url or f"127.0.0.1:{self.embedded_broker_port}"


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment."""
    return Settings()
