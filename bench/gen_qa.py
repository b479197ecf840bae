"""Generate a labelled retrieval benchmark: a realistic memctl store plus `queries.jsonl`.

Notes are what a coding agent would remember (ports, hosts, versions, owners, dates, rules,
commands, pitfalls), built from fact *frames* (a template pool per language) filled from slot
vocabularies. Every frame has a key (say: staging + database for "which port"), and each key
has at most one ACTIVE note in a project's scope, so exactly one note answers a query made
from it; the many other notes of the same frames and the MEMORY.md / SCRATCHPAD.md files share
its common words (database, deploy, cache, 部署, 数据库, 缓存…) and compete with it.
Some keys also get a stale sibling (superseded, archived or expired) with an older value and
the same words: a query's label is always the active note, a stale sibling in the results is
a leak.

Labels come from the generator (the note a query was rendered from), never from memctl.

    python bench/gen_qa.py [--out bench/out/retrieval] [--seed 7] [--notes 3200]

writes OUT/store/ (notes, MEMORY.md, SCRATCHPAD.md; run `memctl --store OUT/store init`
to make it a store), OUT/queries.jsonl and OUT/meta.json (seed, counts and the pinned clock
to pass as MEMCTL_NOW). The same seed and size give byte-identical files.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from gen_corpus import note_id, slug_of, stamp

# The pinned clock: every date in the store is relative to it, and the benchmark passes it
# as MEMCTL_NOW so expiry and recency do not depend on the day the benchmark runs.
NOW = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
NOW_TEXT = stamp(NOW)
OLDEST = datetime(2025, 1, 15, tzinfo=UTC)

CLASSES = ("keyword", "partial", "typo", "question", "agent", "pasted")
# Per language; above the required 40/30/30/60 so each cell has a little more weight.
QUERY_COUNTS = {"keyword": 48, "partial": 36, "typo": 36, "question": 72, "agent": 60, "pasted": 24}
# The classes made in one pass from the generator's main random stream; `agent` questions come
# after, from a stream of their own, and `pasted` errors after them from another, so adding
# each left every earlier query as it was.
MAIN_CLASSES = CLASSES[:4]
LANG_WEIGHTS = {"en": 45, "zh": 45, "mixed": 10}
STALE_ODDS = (("superseded", 0.08), ("archived", 0.03), ("expired", 0.04))

Slots = dict[str, str]

# ---------------------------------------------------------------------------------------
# Vocabularies. Each entry carries its English and Chinese forms plus the shorter forms a
# person types in a search box (`*_kw`) and related words that are NOT in the note (`*_alt`)
# for partial-word queries.
# ---------------------------------------------------------------------------------------

PROJECTS = [
    ("blog-backend", "博客后端"), ("shop-api", "商城接口"), ("mobile-app", "移动端"),
    ("data-pipeline", "数据管道"), ("infra", "基础设施"), ("auth-service", "认证服务"),
    ("search-engine", "搜索服务"), ("billing", "计费系统"), ("admin-portal", "运营后台"),
    ("ml-platform", "机器学习平台"), ("chat-bot", "聊天机器人"), ("docs-site", "文档站"),
    ("payments", "支付服务"), ("analytics", "数据分析"), ("iot-hub", "物联网平台"),
    ("notify", "通知服务"),
]

# name, zh, alt (en, not in notes), zh alt, short host name
ENVS = [
    ("staging", "预发", "stg", "预发布", "stg"), ("production", "生产", "prod", "线上", "prod"),
    ("dev", "开发", "development", "开发机", "dev"), ("test", "测试", "qa", "测试服", "test"),
    ("canary", "灰度", "canary pool", "灰度发布", "canary"), ("preview", "预览", "preview env", "预览版", "pre"),
]


@dataclass(frozen=True)
class Component:
    name: str
    kw: str
    zh: str
    host: str
    port: int
    products: tuple[tuple[str, str, str], ...]  # (name, version, how people type the name)


COMPONENTS = [
    Component("database", "database", "数据库", "db", 5432,
              (("PostgreSQL", "16", "postgres"), ("PostgreSQL", "15", "postgres"), ("MySQL", "8.0", "mysql"))),
    Component("cache", "cache", "缓存", "cache", 6379,
              (("Redis", "7", "redis"), ("Redis", "6.2", "redis"), ("Valkey", "8", "valkey"), ("Memcached", "1.6", "memcache"))),
    Component("message queue", "queue", "消息队列", "mq", 5672,
              (("RabbitMQ", "3.13", "rabbit"), ("Kafka", "3.7", "kafka"), ("NATS", "2.10", "nats"))),
    Component("search cluster", "search cluster", "搜索集群", "es", 9200,
              (("Elasticsearch", "8.15", "elastic"), ("OpenSearch", "2.17", "opensearch"), ("Meilisearch", "1.10", "meili"))),
    Component("API gateway", "gateway", "API 网关", "gw", 8000,
              (("Kong", "3.8", "kong"), ("Envoy", "1.31", "envoy"), ("Traefik", "3.1", "traefik"))),
    Component("object storage", "object storage", "对象存储", "s3", 9000,
              (("MinIO", "RELEASE.2024-10", "minio"), ("Ceph RGW", "18", "ceph"))),
    Component("metrics server", "metrics server", "监控服务", "mon", 9090,
              (("Prometheus", "2.54", "prometheus"), ("VictoriaMetrics", "1.103", "victoria"))),
    Component("log collector", "log collector", "日志采集", "log", 8686,
              (("Vector", "0.41", "vector"), ("Fluent Bit", "3.1", "fluentbit"), ("Loki", "3.2", "loki"))),
    Component("connection pooler", "pooler", "连接池代理", "pgb", 6432,
              (("PgBouncer", "1.23", "pgbouncer"), ("pgcat", "0.2", "pgcat"))),
    Component("job scheduler", "scheduler", "任务调度器", "sched", 8080,
              (("Airflow", "2.10", "airflow"), ("Temporal", "1.25", "temporal"))),
    Component("reverse proxy", "proxy", "反向代理", "lb", 443,
              (("Nginx", "1.27", "nginx"), ("Caddy", "2.8", "caddy"), ("HAProxy", "3.0", "haproxy"))),
    Component("analytics database", "analytics database", "分析库", "ch", 8123,
              (("ClickHouse", "24.8", "clickhouse"), ("DuckDB", "1.1", "duckdb"))),
]
COMPONENT = {c.name: c for c in COMPONENTS}
COMPONENT_TAG = {"database": "database", "cache": "cache", "message queue": "queue", "search cluster": "search",
                 "API gateway": "gateway", "object storage": "storage", "metrics server": "metrics",
                 "log collector": "logging", "connection pooler": "pooler", "job scheduler": "scheduler",
                 "reverse proxy": "proxy", "analytics database": "analytics"}

JOBS = [  # en, keyword form, zh, zh keyword form
    ("nightly backup job", "nightly backup", "夜间备份任务", "夜间备份"),
    ("log rotation job", "log rotation", "日志轮转任务", "日志轮转"),
    ("weekly report export", "weekly report", "周报导出任务", "周报导出"),
    ("invoice run", "invoice run", "账单生成任务", "账单生成"),
    ("search reindex job", "search reindex", "搜索重建索引任务", "重建索引"),
    ("cache warm-up job", "cache warm-up", "缓存预热任务", "缓存预热"),
    ("data retention cleanup", "retention cleanup", "过期数据清理任务", "过期数据清理"),
    ("certificate renewal job", "certificate renewal", "证书续期任务", "证书续期"),
    ("sitemap build", "sitemap build", "站点地图生成任务", "站点地图"),
    ("database vacuum job", "vacuum job", "数据库清理任务", "数据库清理"),
    ("metrics rollup job", "metrics rollup", "指标汇总任务", "指标汇总"),
    ("email digest job", "email digest", "邮件摘要任务", "邮件摘要"),
]
CLUSTERS = ["b2", "c1", "k8s-east-2", "gke-prod-3", "hz-b", "sh-02", "eks-blue", "eks-green",
            "nomad-a", "bj-k8s-4", "fra-1", "sg-2"]

PEOPLE = [  # en, zh, how a note addresses them
    ("Wang Lei", "王磊", "Lei"), ("Li Na", "李娜", "Na"), ("Zhang Wei", "张伟", "Wei"),
    ("Chen Jing", "陈静", "Jing"), ("Liu Yang", "刘洋", "Yang"), ("Zhao Min", "赵敏", "Min"),
    ("Huang Tao", "黄涛", "Tao"), ("Zhou Qiang", "周强", "Qiang"), ("Sun Li", "孙丽", "Li"),
    ("Anna Berg", "Anna", "Anna"), ("Marco Rossi", "Marco", "Marco"), ("Priya Shah", "Priya", "Priya"),
    ("Tom Becker", "Tom", "Tom"), ("Sara Kim", "Sara", "Sara"),
]

AREAS = [  # en, keyword form, zh
    ("billing code", "billing code", "计费代码"), ("CI pipeline", "ci pipeline", "CI 流水线"),
    ("database migrations", "migrations", "数据库迁移"), ("on-call rotation", "on-call rotation", "值班排班"),
    ("Terraform modules", "terraform modules", "Terraform 模块"),
    ("mobile release process", "mobile release", "移动端发版流程"),
    ("search ranking", "search ranking", "搜索排序"), ("login flow", "login flow", "登录流程"),
    ("payment webhooks", "payment webhooks", "支付回调"),
    ("Kubernetes manifests", "kubernetes manifests", "Kubernetes 配置"),
    ("design system", "design system", "设计系统"), ("data warehouse", "data warehouse", "数据仓库"),
    ("alerting rules", "alerting rules", "告警规则"), ("API docs", "api docs", "接口文档"),
    ("load test scripts", "load test scripts", "压测脚本"),
]

SERVICES = [  # en, keyword form, zh
    ("API server", "api server", "API 服务"), ("web frontend", "frontend", "前端"),
    ("background worker", "worker", "后台 worker"), ("admin panel", "admin panel", "运营后台"),
    ("scheduler service", "scheduler service", "调度服务"), ("mobile BFF", "bff", "移动端 BFF"),
    ("webhook receiver", "webhook receiver", "回调服务"), ("search indexer", "indexer", "索引服务"),
]
DEPLOY_CAUSES = [  # en cause, zh cause, en fix, zh fix
    ("the migration held a lock on the {table} table for {m} minutes", "迁移在 {table} 表上锁了 {m} 分钟",
     "Big migrations now run in batches outside the deploy", "大迁移现在分批执行，不放在部署里"),
    ("the image was built for arm64 only", "镜像只构建了 arm64 版本",
     "CI now builds amd64 and arm64", "CI 现在同时构建 amd64 和 arm64"),
    ("the health check still pointed at /health instead of /healthz", "健康检查还指向 /health 而不是 /healthz",
     "The chart reads the path from values.yaml", "健康检查路径改从 values.yaml 读取"),
    ("the TLS certificate for {domain} had expired", "{domain} 的 TLS 证书过期了",
     "cert-manager renews it now", "现在由 cert-manager 自动续期"),
    ("the disk on {host} was full", "{host} 的磁盘满了",
     "Old images are pruned every night", "每晚清理旧镜像"),
    ("DATABASE_URL was missing from the new release's environment", "新版本的环境变量里少了 DATABASE_URL",
     "The deploy checks required env vars first", "部署前先检查必需的环境变量"),
    ("the pod was OOM-killed at {mem} MiB", "容器超过 {mem} MiB 内存被 OOM kill",
     "The memory limit is {mem2} MiB now", "内存上限改成了 {mem2} MiB"),
    ("npm install pulled a broken {lib} release", "npm install 拉到了有问题的 {lib} 版本",
     "CI installs with --frozen-lockfile", "CI 现在用 --frozen-lockfile 安装"),
    ("a feature flag default flipped to on", "一个功能开关的默认值被改成了开启",
     "Flag defaults are reviewed like code", "开关默认值和代码一样要走评审"),
    ("the readiness probe timed out while the cache was warming up", "缓存预热时就绪探针超时了",
     "The probe waits {m}0 seconds now", "探针现在等待 {m}0 秒"),
]
TABLES = ["orders", "users", "comments", "events", "invoices", "sessions", "payments", "devices"]
NPM_LIBS = ["axios", "sharp", "esbuild", "date-fns", "zod", "prisma"]

# comp, param, keyword, alt (not in the note), zh, zh alt, values (en, zh)
PARAMS = [
    ("database", "connection pool size", "pool size", "pool limit", "连接池大小", "连接池上限",
     (("20 per worker", "每个 worker 20"), ("10 per worker", "每个 worker 10"), ("50", "50"))),
    ("database", "statement timeout", "statement timeout", "query timeout", "语句超时", "查询超时",
     (("30s", "30 秒"), ("15s", "15 秒"), ("5s", "5 秒"))),
    ("database", "max_connections", "max_connections", "connection limit", "最大连接数", "连接上限",
     (("200", "200"), ("400", "400"), ("100", "100"))),
    ("cache", "maxmemory", "maxmemory", "memory cap", "最大内存", "内存上限",
     (("2gb", "2gb"), ("4gb", "4gb"), ("512mb", "512mb"))),
    ("cache", "eviction policy", "eviction policy", "evict setting", "淘汰策略", "过期策略",
     (("allkeys-lru", "allkeys-lru"), ("volatile-ttl", "volatile-ttl"), ("allkeys-lfu", "allkeys-lfu"))),
    ("message queue", "prefetch count", "prefetch count", "prefetch setting", "预取数量", "预取设置",
     (("10", "10"), ("50", "50"), ("1", "1"))),
    ("message queue", "message retention", "retention", "retention period", "消息保留时间", "保留多久",
     (("7 days", "7 天"), ("72 hours", "72 小时"), ("24 hours", "24 小时"))),
    ("API gateway", "rate limit", "rate limit", "throttling", "限流阈值", "限速",
     (("100 requests per minute per key", "每个 key 每分钟 100 次"), ("50 rps", "50 rps"),
      ("1000 requests per minute", "每分钟 1000 次"))),
    ("API gateway", "upstream timeout", "upstream timeout", "proxy timeout", "上游超时", "代理超时",
     (("60s", "60 秒"), ("30s", "30 秒"), ("15s", "15 秒"))),
    ("connection pooler", "pool mode", "pool mode", "pooling mode", "连接池模式", "池化模式",
     (("transaction", "transaction"), ("session", "session"))),
    ("connection pooler", "max client connections", "max client connections", "client limit",
     "最大客户端连接数", "客户端上限", (("1000", "1000"), ("2000", "2000"))),
    ("search cluster", "refresh interval", "refresh interval", "refresh rate", "刷新间隔", "刷新频率",
     (("30s", "30 秒"), ("5s", "5 秒"), ("1s", "1 秒"))),
    ("search cluster", "shard count", "shard count", "number of shards", "分片数", "分片数量",
     (("6", "6"), ("3", "3"), ("12", "12"))),
    ("reverse proxy", "worker_connections", "worker_connections", "nginx concurrency", "worker 连接数", "并发连接",
     (("4096", "4096"), ("1024", "1024"))),
    ("object storage", "lifecycle rule for tmp/", "lifecycle rule", "expiry policy", "tmp/ 的生命周期规则", "过期删除",
     (("delete after 7 days", "7 天后删除"), ("delete after 24 hours", "24 小时后删除"))),
    ("log collector", "batch size", "batch size", "batching", "批量大小", "批次大小",
     (("500 events", "500 条"), ("1 MiB", "1 MiB"))),
    ("job scheduler", "max parallel runs", "parallel runs", "concurrency", "最大并发数", "并发上限",
     (("4", "4"), ("8", "8"), ("16", "16"))),
    ("metrics server", "scrape interval", "scrape interval", "scrape frequency", "抓取间隔", "采集频率",
     (("15s", "15 秒"), ("30s", "30 秒"), ("60s", "60 秒"))),
    ("metrics server", "retention", "retention", "retention period", "数据保留期", "保留时长",
     (("15 days", "15 天"), ("30 days", "30 天"), ("90 days", "90 天"))),
    ("analytics database", "max memory per query", "memory per query", "query memory limit",
     "单查询内存上限", "查询内存", (("10 GB", "10 GB"), ("4 GB", "4 GB"))),
]
CONFIG_WHY = [
    ("higher values ran out of memory at peak", "调高以后高峰期内存不够"),
    ("agreed with {person} after the load test", "压测后和{person_zh}商量定的"),
    ("the default was too low for batch traffic", "默认值扛不住批量流量"),
    ("see the capacity sheet", "参考容量规划表"),
]
INCIDENTS = [("the {month_en} outage", "{month} 月的故障"), ("the Black Friday load test", "双十一压测"),
             ("the last capacity review", "上次容量评审")]

# purpose, keyword, alt (not in the note), zh, zh alt, (chosen, rejected) pairs
PURPOSES = [
    ("the query builder", "query builder", "orm", "查询构建", "ORM 选型",
     (("Kysely", "Prisma"), ("SQLAlchemy Core", "Django ORM"), ("sqlc", "GORM"))),
    ("background jobs", "background jobs", "task queue", "后台任务", "任务队列",
     (("Celery", "RQ"), ("BullMQ", "Agenda"), ("Sidekiq", "Resque"))),
    ("feature flags", "feature flags", "toggles", "功能开关", "特性开关", (("Unleash", "LaunchDarkly"), ("GrowthBook", "Flagsmith"))),
    ("end-to-end tests", "end-to-end tests", "browser tests", "端到端测试", "E2E", (("Playwright", "Cypress"),)),
    ("error tracking", "error tracking", "exception monitoring", "错误追踪", "异常监控", (("Sentry", "Rollbar"), ("GlitchTip", "Sentry"))),
    ("CI", "ci", "build server", "持续集成", "构建平台", (("GitHub Actions", "Jenkins"), ("GitLab CI", "CircleCI"))),
    ("the API reference", "api reference", "openapi viewer", "接口文档展示", "API 文档", (("Redoc", "Swagger UI"), ("Scalar", "Redoc"))),
    ("card payments", "card payments", "payment provider", "银行卡支付", "支付服务商", (("Stripe", "Adyen"), ("Adyen", "Braintree"))),
    ("transactional email", "transactional email", "smtp service", "事务邮件", "邮件服务", (("Postmark", "SendGrid"), ("Amazon SES", "Mailgun"))),
    ("infrastructure as code", "infrastructure code", "iac tool", "基础设施即代码", "IaC", (("Terraform", "Pulumi"), ("OpenTofu", "Terraform"))),
    ("container orchestration", "container orchestration", "scheduler platform", "容器编排", "编排平台", (("Kubernetes", "Nomad"), ("ECS", "Kubernetes"))),
    ("frontend state", "frontend state", "store library", "前端状态管理", "状态库", (("Zustand", "Redux"), ("Pinia", "Vuex"))),
    ("the logging library", "logging library", "logger", "日志库", "日志框架", (("structlog", "loguru"), ("pino", "winston"))),
    ("object-level permissions", "permissions", "authorization rules", "对象级权限", "鉴权规则", (("OpenFGA", "Casbin"), ("Casbin", "hand-written checks"))),
]
DECISION_REASONS = [
    ("it is typed end to end", "类型从头到尾都能推导"), ("the team already knows it", "团队已经熟悉"),
    ("it is cheaper at our volume", "按我们的量更便宜"), ("the customer requires self-hosting", "客户要求私有化部署"),
    ("its retries are simpler", "重试机制更简单"), ("it has official ARM images", "有官方 ARM 镜像"),
    ("the other one was abandoned upstream", "另一个上游已经不维护了"),
]

SECRET_SERVICES = [  # en, zh, slug
    ("Stripe", "Stripe", "stripe"), ("SendGrid", "SendGrid", "sendgrid"), ("Sentry", "Sentry", "sentry"),
    ("OpenAI", "OpenAI", "openai"), ("GitHub App", "GitHub App", "github-app"), ("Mapbox", "Mapbox", "mapbox"),
    ("Twilio", "Twilio", "twilio"), ("Aliyun SMS", "阿里云短信", "aliyun-sms"), ("WeChat Pay", "微信支付", "wechat-pay"),
    ("Slack webhook", "Slack webhook", "slack-webhook"), ("Datadog", "Datadog", "datadog"),
    ("Cloudflare", "Cloudflare", "cloudflare"),
]
VAULTS = ["Engineering", "Platform", "Ops shared", "Backend"]

THINGS = [  # en, zh
    ("error budget", "错误预算"), ("queue lag", "队列积压"), ("API latency", "接口延迟"),
    ("checkout funnel", "下单漏斗"), ("database load", "数据库负载"), ("cache hit rate", "缓存命中率"),
    ("job failures", "任务失败"), ("disk usage", "磁盘使用率"), ("login errors", "登录错误"),
]

LIBS = [  # name, pinned version, why (en, zh)
    ("Django", "5.0.9", "5.1 breaks our custom auth backend", "5.1 会弄坏我们自定义的认证后端"),
    ("React", "18.3", "the design system is not ready for 19", "设计系统还没适配 19"),
    ("urllib3", "1.26", "botocore in our image still needs 1.x", "镜像里的 botocore 还依赖 1.x"),
    ("Pydantic", "1.10", "the API models are not migrated to v2", "API 模型还没迁移到 v2"),
    ("webpack", "5.94", "a loader we use breaks on newer minors", "我们用的一个 loader 在新版本上会挂"),
    ("Celery", "5.3", "5.4 changed the retry semantics", "5.4 改了重试语义"),
    ("numpy", "1.26", "the model code uses removed aliases", "模型代码用到了已删除的别名"),
    ("Next.js", "14.2", "the app router migration is pending", "app router 迁移还没做"),
    ("TypeScript", "5.4", "5.5 reports hundreds of new errors", "5.5 会报几百个新错误"),
    ("psycopg", "3.1", "3.2 changed the connection pool defaults", "3.2 改了连接池默认值"),
    ("protobuf", "4.25", "code generated by 5.x fails our linter", "5.x 生成的代码过不了 lint"),
    ("boto3", "1.34", "newer releases drop Python 3.8 on the legacy workers", "新版本不支持旧 worker 上的 Python 3.8"),
    ("Node", "20 LTS", "a native module has no build for 22", "有个原生模块没有 22 的构建"),
    ("SQLAlchemy", "1.4", "the 2.0 query style migration is half done", "2.0 查询风格迁移只做了一半"),
    ("librdkafka", "2.3", "newer releases leak memory with our settings", "新版本在我们的配置下会内存泄漏"),
]

REGIONS = ["eu-central-1", "us-east-2", "ap-east-1", "cn-hangzhou", "cn-shanghai", "ap-southeast-1"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December"]

# Rules, how-tos, pitfalls and global preferences are written out whole: their wording
# matters more than slots. Each has its note text, a keyword query (words of the note), a
# partial query (some words of the note, some not) and two questions per language.
RULE_FIELDS = ("act", "instead", "kw", "part", "q0", "q1", "act_zh", "instead_zh", "kw_zh", "part_zh", "q0_zh", "q1_zh")
RULES = [
    ("run database migrations by hand on production", "the release job runs them", "database migrations production",
     "manual migration prod", "can I run a migration manually in production", "who runs the database migrations on prod",
     "在生产环境手动跑数据库迁移", "发布流水线会自动执行迁移", "手动 数据库迁移", "生产 手工迁移",
     "生产环境可以手动执行迁移吗？", "线上的数据库迁移谁来跑"),
    ("force-push to main or any shared branch", "open a revert PR instead", "force push main",
     "overwrite main history", "am I allowed to force push to main", "what should I do instead of force-pushing a shared branch",
     "强推 main 或任何共享分支", "需要撤销就开一个 revert PR", "强推 main", "强制推送 main",
     "可以强推main分支吗？", "共享分支能不能force push"),
    ("deploy after 15:00 on a Friday", "wait for Monday unless it is a hotfix", "friday deploy",
     "friday release freeze", "can we deploy on a Friday afternoon", "is there a deploy freeze at the end of the week",
     "周五 15 点以后发布", "除非是紧急修复，否则等到周一", "周五 发布", "周五 上线窗口",
     "周五下午能发版吗", "周五几点以后不让发布了？"),
    ("commit .env files or any file with real credentials", "keep them in the secret store and commit .env.example",
     "env files commit", "dotenv files git", "should the .env file be committed to the repo",
     "where do real credentials go if not in .env",
     "提交 .env 文件或任何带真实凭据的文件", "放到密钥管理里，只提交 .env.example", ".env 提交", "环境变量文件 提交",
     "可以把.env提交到仓库吗？", "真实的账号密码应该放在哪里"),
    ("log request bodies of the login and token endpoints", "the logger redacts password and token fields",
     "login request bodies", "log sensitive payload login", "is it ok to log the body of login requests",
     "what gets redacted in our request logs",
     "打印登录和令牌接口的请求体", "日志库会脱敏 password 和 token 字段", "登录 请求体", "登录 日志脱敏",
     "登录请求的body能打日志吗？", "日志里哪些字段要脱敏"),
    ("merge a PR without a green CI run", "rerun flaky jobs, don't skip them", "merge green ci",
     "merge failing pipeline", "can I merge when CI is red", "what do we do with flaky CI jobs",
     "在 CI 没通过的情况下合并 PR", "不稳定的任务就重跑，别跳过", "CI 合并", "合并 流水线失败",
     "CI挂了还能合并PR吗？", "CI里不稳定的任务怎么处理"),
    ("use SELECT * in API queries", "list the columns so a schema change cannot leak fields", "select api queries columns",
     "select all columns api", "why shouldn't we use select star in queries", "do we have to list columns explicitly in SQL",
     "在接口查询里写 SELECT *", "把列名写全，防止表结构变更把字段泄露出去", "SELECT 列名", "查询 星号",
     "接口查询里为什么不能用SELECT *？", "SQL里要不要把列名写全"),
    ("call third-party APIs without a timeout", "default to 10 s and log the call", "third-party apis timeout",
     "external http client timeout", "what timeout should calls to external APIs use", "do third-party requests need a timeout",
     "调用第三方接口不设超时", "默认 10 秒超时并记录日志", "第三方接口 超时", "第三方 超时时间",
     "调第三方接口要设多少超时？", "外部API请求默认超时是多少"),
    ("share staging credentials in chat", "share a 1Password link", "staging credentials chat",
     "send staging password slack", "how should I share staging passwords with a colleague",
     "can I paste the staging login into chat",
     "在聊天群里发预发环境的账号密码", "用 1Password 分享链接", "账号密码 聊天群", "预发 密码 发群里",
     "预发的账号密码怎么发给同事？", "能不能把预发环境密码直接发到群里"),
    ("edit a migration that has already run anywhere", "write a new migration that fixes it", "edit migration already run",
     "change old migration file", "can I change a migration after it ran on staging",
     "what to do if a migration that already ran is wrong",
     "修改已经在任何环境执行过的迁移", "写一个新的迁移来修正", "修改 迁移 执行过", "旧迁移 修改",
     "已经跑过的迁移还能改吗？", "跑过的迁移写错了怎么办"),
    ("skip the pre-commit hooks with --no-verify", "fix the hook or the code", "pre-commit no-verify",
     "bypass git hooks", "is it ok to commit with --no-verify", "the pre-commit hook fails, can I skip it",
     "用 --no-verify 跳过 pre-commit 钩子", "要么修钩子，要么修代码", "pre-commit 钩子", "跳过 提交钩子",
     "pre-commit检查不过可以跳过吗", "能不能用--no-verify提交"),
    ("delete production data without a fresh backup", "take a snapshot first and note its id",
     "delete production data backup", "drop prod table snapshot", "what do I need before deleting data in production",
     "do I have to back up before removing prod rows",
     "在没有新备份的情况下删除生产数据", "先做快照并记下快照 ID", "删除 生产数据 备份", "删库 快照",
     "删生产数据之前要做什么？", "线上删数据前需要先备份吗"),
    ("hard-code feature flag values", "read them from the flag service", "feature flag values",
     "feature toggle defaults", "can I hardcode a feature flag in the code", "where should feature flag values come from",
     "把功能开关的值写死在代码里", "从功能开关服务读取", "功能开关 写死", "开关 硬编码",
     "功能开关能直接写死在代码里吗？", "开关的值应该从哪里读"),
    ("add a dependency without checking its license", "GPL and AGPL need legal's OK", "dependency license",
     "new package licence check", "what do I have to check before adding a new dependency", "are GPL libraries allowed",
     "不检查许可证就引入新依赖", "GPL 和 AGPL 需要法务同意", "依赖 许可证", "第三方库 许可证",
     "引入新依赖之前要检查什么", "可以用GPL协议的库吗？"),
    ("restart the cache during business hours", "do it after 22:00 and warm it up", "restart cache business hours",
     "cache reboot daytime", "when am I allowed to restart the cache", "can the cache be restarted during the day",
     "在工作时间重启缓存", "22 点以后再重启并预热", "重启 缓存", "缓存 白天重启",
     "缓存什么时候可以重启？", "白天能重启缓存吗"),
    ("ship a public API change without a version bump", "add /v2 and keep /v1 for 6 months", "public api version",
     "breaking api change policy", "how do we release a breaking change to the public API",
     "how long do we keep the old API version",
     "不升版本号就发布对外接口的变更", "新增 /v2，/v1 保留 6 个月", "对外接口 版本号", "接口 兼容性",
     "对外接口有不兼容的改动要怎么发布？", "旧版本的接口要保留多久"),
]

TASK_FIELDS = ("task", "cmds", "kw", "part", "q0", "q1", "task_zh", "kw_zh", "part_zh", "q0_zh", "q1_zh")
TASKS = [
    ("reset the local database", ("make db-reset", "./scripts/reset-db.sh"), "reset local database", "wipe local db",
     "how do I reset my local database", "what's the command to wipe the local db and start fresh",
     "重置本地数据库", "重置 本地数据库", "本地 清空数据库", "本地数据库怎么重置？", "想清空本地库重新来要跑什么命令"),
    ("regenerate the API client", ("pnpm run gen:api", "make openapi-client"), "regenerate api client",
     "openapi client codegen", "how do I regenerate the API client after changing the spec",
     "which command rebuilds the generated client",
     "重新生成 API 客户端", "生成 API 客户端", "接口 SDK 生成", "改了接口定义以后怎么重新生成客户端？", "API客户端代码用什么命令生成"),
    ("tail the production logs", ("kubectl logs -f deploy/api -n prod --since=10m", "stern -n prod api"),
     "tail production logs", "prod log stream", "how can I follow the production logs live",
     "what's the command to see prod logs",
     "查看生产环境的实时日志", "生产环境 实时日志", "线上 日志", "怎么看线上的实时日志？", "生产日志用什么命令看"),
    ("open a psql shell on staging", ("fly ssh console -C 'psql $DATABASE_URL'", "make psql ENV=staging"),
     "psql shell staging", "connect staging postgres console", "how do I get a psql prompt on the staging database",
     "how to connect to staging postgres from my laptop",
     "连上预发环境的 psql", "预发 psql", "预发 数据库命令行", "怎么连到预发的数据库？", "预发环境的psql怎么打开"),
    ("purge the CDN cache", ("cf-purge --zone {domain} --everything", "make cdn-purge"), "purge cdn cache",
     "clear cloudflare cache", "how do I clear the CDN cache after a deploy",
     "what's the command to flush cached pages at the edge",
     "清理 CDN 缓存", "CDN 缓存", "CDN 刷新", "发布后怎么清CDN缓存？", "CDN要刷新用什么命令"),
    ("rebuild the search index", ("python manage.py search_index --rebuild -f", "make reindex"), "rebuild search index",
     "search reindex docs", "how can I rebuild the search index from scratch", "what command re-creates the search index",
     "重建搜索索引", "重建 搜索索引", "索引 全量重建", "搜索索引怎么全量重建？", "重建索引的命令是什么"),
    ("rotate the JWT signing key", ("./scripts/rotate-jwt.sh --grace 24h", "make rotate-jwt"), "rotate jwt key",
     "jwt secret rotation", "how do I rotate the key used to sign JWTs",
     "what happens to old tokens when we change the JWT signing key",
     "轮换 JWT 签名密钥", "JWT 签名密钥", "JWT 换密钥", "JWT的签名密钥怎么换？", "换JWT密钥要跑哪个脚本"),
    ("run the load test", ("k6 run load/checkout.js --vus 200", "locust -f load/checkout.py"), "run load test",
     "performance benchmark checkout", "how do we run the load test against checkout", "which tool do we use for load testing",
     "跑压测", "压测 checkout", "性能测试 checkout", "压测怎么跑？", "性能压测用的什么工具"),
    ("seed test data", ("make seed FIXTURES=demo", "python manage.py loaddata demo"), "seed test data",
     "populate demo fixtures", "how do I fill the database with demo data", "what command loads the test fixtures",
     "灌测试数据", "灌 测试数据", "造数据 demo", "怎么给本地灌一批测试数据？", "demo数据用什么命令导入"),
    ("roll back a release", ("helm rollback api 0 -n prod", "fly releases rollback"), "roll back release",
     "undo deploy helm", "how do I roll back a bad release", "what's the quickest way to undo a deploy",
     "回滚一次发布", "回滚 发布", "版本回退 helm", "发布出问题了怎么回滚？", "回滚上一个版本用什么命令"),
    ("restore a database backup", ("pgbackrest --stanza=main --delta restore", "make restore BACKUP=latest"),
     "restore database backup", "recover from snapshot pgbackrest", "how do I restore the database from a backup",
     "what are the steps to recover data from last night's backup",
     "从备份恢复数据库", "恢复 备份", "数据恢复 pgbackrest", "数据库怎么从备份恢复？", "昨晚的备份要怎么还原"),
    ("profile a slow endpoint", ("py-spy record -o profile.svg --pid $(pgrep -f gunicorn)", "make profile URL=/v1/orders"),
     "profile slow endpoint", "flamegraph slow api", "how do I find out why an endpoint is slow",
     "how to get a flame graph of the API",
     "分析慢接口的性能", "慢接口 性能", "慢接口 火焰图", "接口很慢怎么分析？", "怎么生成火焰图"),
    ("release a stuck Terraform state lock", ("terraform force-unlock LOCK_ID", "make tf-unlock"), "terraform state lock",
     "terraform locked apply", "terraform says the state is locked, what do I do", "how do I unlock the terraform state",
     "解开卡住的 Terraform 状态锁", "Terraform 状态锁", "Terraform 锁住了", "Terraform状态被锁了怎么办？", "怎么解开terraform的锁"),
    ("run only the integration tests", ("pytest -m integration -x", "make test-integration"), "integration tests",
     "integration suite marker", "how do I run just the integration tests", "which pytest marker selects the integration suite",
     "只跑集成测试", "集成测试 只跑", "集成测试 单独", "怎么只跑集成测试？", "集成测试用哪个pytest标记"),
    ("bump the app version", ("npm version minor && git push --follow-tags", "make bump-version"), "bump app version",
     "increase version tag release", "how do I bump the version and tag it", "what's the process to increase the app version",
     "升级应用版本号", "应用版本号", "版本号 打tag", "应用版本号怎么升？", "打版本tag用什么命令"),
]

PITFALL_FIELDS = ("text", "kw", "part", "q0", "q1", "text_zh", "kw_zh", "part_zh", "q0_zh", "q1_zh")
PITFALLS = [
    ("`ECONNRESET` from the database pool after idle periods: the pooler dropped idle connections after {n}s, "
     "before the client did; the client now recycles them after {m}s.",
     "econnreset pool", "connection reset idle db", "why do we get connection resets after the app sits idle",
     "what causes ECONNRESET from the db pool",
     "空闲一段时间后数据库连接池报 `ECONNRESET`：连接池代理 {n} 秒就断开空闲连接，比客户端早；客户端现在 {m} 秒回收连接。",
     "ECONNRESET 连接池", "连接重置 空闲", "应用空闲一会儿后连接就被重置是什么原因？", "连接池报ECONNRESET怎么解决"),
    ("Celery tasks ran twice: the visibility timeout ({n}s) was shorter than the longest task.",
     "celery tasks twice", "duplicate celery jobs", "why did Celery run the same task twice",
     "what causes duplicate task execution in celery",
     "Celery 任务被执行了两次：visibility timeout（{n} 秒）比最长的任务还短。",
     "Celery 两次", "任务重复 Celery", "Celery任务为什么会跑两遍？", "任务被重复执行是什么原因"),
    ("Time zone bug: the cron ran at 10:00 instead of 02:00 because the container was on Asia/Shanghai, not UTC.",
     "cron time zone", "cron eight hours off", "why did the cron job run eight hours late",
     "which timezone do the containers use",
     "时区问题：容器用的是 Asia/Shanghai 而不是 UTC，定时任务在 10 点而不是 2 点跑了。",
     "时区 定时任务", "定时任务 晚了8小时", "定时任务为什么晚了8个小时才跑？", "容器的时区是什么"),
    ("OOM kills on the worker came from pandas loading the whole CSV; read it in chunks of {n}000 rows.",
     "oom worker pandas", "memory spike csv import", "why was the worker killed for running out of memory",
     "how should big CSV files be read",
     "worker 被 OOM kill 是因为 pandas 一次读了整个 CSV，改成每批 {n}000 行分块读取。",
     "OOM pandas", "内存暴涨 CSV", "worker为什么会被OOM杀掉？", "大CSV文件应该怎么读"),
    ("Webhook signatures failed because the body was parsed before verification; verify the raw bytes.",
     "webhook signatures raw", "stripe webhook invalid signature", "why does webhook signature verification keep failing",
     "do we verify the webhook against the parsed JSON or the raw body",
     "回调签名校验失败，是因为请求体在校验之前就被解析了；要用原始字节校验。",
     "回调 签名校验", "回调 验签", "回调的签名为什么校验不过？", "验签应该用原始请求体还是解析后的JSON"),
    ("Slow checkout queries: missing index on orders(customer_id, created_at); the planner did a seq scan over {n}M rows.",
     "orders index customer_id", "checkout slow sql", "why were the checkout queries so slow",
     "which index was missing on the orders table",
     "下单查询慢：orders 表缺少 (customer_id, created_at) 索引，执行计划走了全表扫描，扫了 {n} 百万行。",
     "orders 索引 全表扫描", "下单 慢SQL", "下单接口的查询为什么那么慢？", "orders表少了哪个索引"),
    ("Docker builds broke on the M2 laptops: the base image had no arm64 variant; build with --platform linux/amd64.",
     "docker arm64 builds", "apple silicon docker image", "why does the docker build fail on an M2 mac",
     "which platform flag do we need for docker on apple silicon",
     "M2 笔记本上 Docker 构建失败：基础镜像没有 arm64 版本，要加 --platform linux/amd64。",
     "Docker arm64", "苹果芯片 镜像", "M2电脑上Docker为什么构建不了？", "在苹果芯片上构建镜像要加什么参数"),
    ("Emails landed in spam until we added DKIM and SPF records for {domain}.",
     "emails spam dkim", "mail deliverability dkim", "why were our emails going to spam",
     "what fixed email deliverability",
     "邮件一直进垃圾箱，给 {domain} 配了 DKIM 和 SPF 之后才好。",
     "邮件 垃圾箱", "邮件 被拦截", "我们的邮件为什么会进垃圾箱？", "邮件被当成垃圾邮件后来是怎么解决的"),
    ("Flaky tests in CI came from tests sharing one database; each worker now gets its own schema.",
     "flaky tests database", "random test failures ci", "why were the CI tests failing randomly",
     "do test workers share a database",
     "CI 里的测试不稳定，是因为测试共用一个数据库；现在每个 worker 用自己的 schema。",
     "测试不稳定 数据库", "偶发失败 测试", "CI测试为什么时好时坏？", "测试的worker是不是共用一个数据库"),
    ("N+1 queries on the posts list: the serializer loaded authors one by one; use select_related.",
     "n+1 queries posts", "posts endpoint too many queries", "why does the posts list fire so many queries",
     "how did we fix the N+1 problem",
     "文章列表的 N+1 查询：序列化时逐个加载作者，改用 select_related。",
     "N+1 查询", "文章列表 查询太多", "文章列表为什么会发那么多条SQL？", "N+1问题最后是怎么修的"),
    ("Redis memory filled up because session keys had no TTL; every session key now expires after {n} days.",
     "redis memory session ttl", "redis full eviction", "why did redis run out of memory",
     "what did we change about session keys in redis",
     "Redis 内存被占满，是因为会话 key 没有设置 TTL；现在会话 key {n} 天后过期。",
     "Redis 内存 TTL", "Redis 内存满了", "Redis内存为什么被占满了？", "会话key后来是怎么改的"),
    ("Uploads over 10 MB failed with 413 because of the proxy's body size limit, not the app.",
     "uploads 413 body size", "large file upload error nginx", "why do big uploads fail with a 413",
     "was the 413 on uploads caused by the app",
     "超过 10 MB 的上传报 413，是代理的请求体大小限制导致的，不是应用的问题。",
     "上传 413", "上传 请求太大", "大文件上传为什么报413？", "上传报413是应用的问题吗"),
]

GLOBAL_FIELDS = ("type", "tags", "text", "kw", "part", "q0", "q1", "text_zh", "kw_zh", "part_zh", "q0_zh", "q1_zh")
GLOBAL_ITEMS = [
    ("preference", "language", "Answer in Chinese; code, code comments, commit messages and docs in English.",
     "code comments english", "docstring language", "what language should code comments be written in",
     "should you reply to me in English or Chinese",
     "回答用中文；代码和代码注释、提交信息、文档一律用英文。", "代码注释 英文", "代码注释 语言",
     "代码注释应该用什么语言写？", "回答用中文还是英文"),
    ("preference", "style", "Indent with 2 spaces in TypeScript, JSON and YAML, 4 in Python.",
     "indent spaces typescript", "tab width yaml", "how many spaces do we indent TypeScript with",
     "tabs or spaces in python files",
     "缩进：TypeScript、JSON 和 YAML 用 2 个空格，Python 用 4 个。", "缩进 空格", "缩进 tab",
     "TypeScript缩进用几个空格？", "Python文件缩进是几个空格"),
    ("preference", "git", "Commit messages follow Conventional Commits (feat:, fix:, chore:) and say why, not what.",
     "commit messages conventional", "git message format", "how should commit messages be written",
     "do we use conventional commits",
     "提交信息遵循 Conventional Commits（feat:、fix:、chore:），写清楚为什么改，而不是改了什么。",
     "提交信息 Conventional", "提交信息 格式规范", "提交信息应该怎么写？", "commit message有什么格式要求"),
    ("decision", "python, tooling", "Python projects use uv for environments and ruff for lint and format; no black, no flake8.",
     "uv ruff python", "python linter choice", "which linter do we use for python",
     "should I use poetry or uv for a new python project",
     "Python 项目用 uv 管理环境，用 ruff 做 lint 和格式化；不用 black 和 flake8。", "ruff 格式化", "Python 代码检查工具",
     "Python用什么做lint和格式化？", "新的Python项目用什么管理虚拟环境"),
    ("decision", "node, tooling", "Use pnpm for every new Node project; leave existing npm projects alone.",
     "pnpm node project", "yarn or pnpm", "which package manager do we use for node", "should new node projects use npm",
     "新的 Node 项目一律用 pnpm，已有的 npm 项目先不动。", "pnpm Node", "包管理器 pnpm",
     "Node项目用哪个包管理器？", "新项目还用npm吗"),
    ("preference", "testing", "Prefer pytest with plain asserts over unittest classes.",
     "pytest unittest", "pytest fixtures style", "should tests use unittest or pytest", "how do we write python tests",
     "测试优先用 pytest 和普通 assert，不写 unittest 的类。", "pytest assert", "单测 风格 pytest",
     "测试用pytest还是unittest？", "Python测试怎么写比较好"),
    ("preference", "git, review", "Keep pull requests under 400 changed lines; split bigger work behind a flag.",
     "pull requests lines", "pull request limit", "how big can a pull request be", "what's the maximum size for a PR",
     "PR 控制在 400 行改动以内，更大的改动用开关拆开。", "PR 改动", "PR 大小",
     "一个PR最多改多少行？", "PR太大怎么办"),
    ("rule", "time", "Store all timestamps in UTC; convert to Asia/Shanghai only when displaying.",
     "timestamps utc", "utc display time zone", "what timezone do we store timestamps in",
     "when do we convert times to Shanghai time",
     "时间一律按 UTC 存储，只在展示的时候转成 Asia/Shanghai。", "UTC 存储", "时区 UTC",
     "时间存库用什么时区？", "什么时候转换成北京时间"),
    ("fact", "machine", "The work laptop is an M2 MacBook Air with 24 GB RAM running macOS 15.",
     "work laptop macbook", "my machine specs ram", "what kind of laptop am I working on",
     "how much memory does the work machine have",
     "工作电脑是 M2 MacBook Air，24 GB 内存，macOS 15。", "工作电脑 MacBook", "电脑配置 内存",
     "我用的是什么电脑？", "工作电脑有多少内存"),
    ("rule", "git", "Branches are named feat/<ticket>-<short-name> or fix/<ticket>-<short-name>.",
     "branches named feat", "git branch convention", "how should I name a new branch", "what prefix do feature branches get",
     "分支命名：feat/<工单号>-<简述> 或 fix/<工单号>-<简述>。", "分支命名", "分支 名字规则",
     "新分支应该怎么命名？", "功能分支用什么前缀"),
    ("preference", "style", "Prefer early returns over nested if/else.",
     "early returns nested", "guard clause style nested", "do we prefer guard clauses or nested ifs",
     "how should I structure deeply nested conditionals",
     "写代码优先用提前返回，少嵌套 if/else。", "提前返回 嵌套", "if 嵌套 风格",
     "代码里多层if嵌套怎么处理？", "要不要用提前return"),
    ("decision", "python, http", "New Python code uses httpx (with timeouts) instead of requests.",
     "httpx requests", "python http library", "which http client should new python code use",
     "is requests still ok for new code",
     "新的 Python 代码用 httpx（带超时），不用 requests。", "httpx requests", "Python HTTP 库",
     "Python里发HTTP请求用哪个库？", "新代码还能用requests吗"),
    ("rule", "ui", "Dates in the UI are YYYY-MM-DD; no US-style month/day.",
     "dates ui", "date display format", "how should dates be formatted in the UI", "do we show dates month first",
     "界面上的日期统一用 YYYY-MM-DD，不用美式的月/日。", "日期 YYYY-MM-DD", "日期格式 界面",
     "界面上日期用什么格式显示？", "日期要不要按美国的月日顺序"),
    ("rule", "docs", "Architecture decisions go into docs/adr/NNNN-title.md, one file per decision.",
     "architecture decisions adr", "adr template location", "where do we write down architecture decisions",
     "what's the naming scheme for ADR files",
     "架构决策记录写在 docs/adr/NNNN-标题.md，一个决策一个文件。", "架构决策 adr", "设计文档 放哪 adr",
     "架构决策应该记在哪里？", "ADR文件怎么命名"),
    ("rule", "git, review", "Every PR needs one approving review; the author merges, squash only.",
     "approving review squash", "merge strategy review", "who merges a PR after it's approved",
     "do we squash or rebase when merging",
     "每个 PR 需要一个人批准，由作者自己合并，只用 squash。", "PR 批准 squash", "合并方式 squash",
     "PR批准以后谁来合并？", "合并用squash还是rebase"),
    ("rule", "security", "gitleaks runs in pre-commit; a hit blocks the commit.",
     "gitleaks pre-commit", "secret scanning gitleaks", "do we scan commits for leaked secrets",
     "what blocks a commit with a password in it",
     "pre-commit 里跑 gitleaks，发现密钥就拦下提交。", "gitleaks 提交", "密钥扫描 gitleaks",
     "提交前会扫描泄露的密钥吗？", "提交里有密码会怎么样"),
    ("preference", "editor", "My editor is Neovim with the LazyVim config; don't suggest VS Code settings.",
     "editor neovim", "vim config setup", "which editor do I use", "should you give me VS Code instructions",
     "我的编辑器是 Neovim（LazyVim 配置），不要给 VS Code 的设置建议。", "编辑器 Neovim", "IDE 设置",
     "我平时用什么编辑器？", "可以给我VS Code的配置吗"),
    ("rule", "shell", "Shell scripts start with `set -euo pipefail` and pass shellcheck.",
     "shell scripts pipefail", "bash script strict mode", "what should every shell script start with",
     "do bash scripts need to pass a linter",
     "Shell 脚本开头写 `set -euo pipefail`，并且要过 shellcheck。", "Shell 脚本 shellcheck", "bash 脚本 严格模式",
     "Shell脚本开头要写什么？", "bash脚本需要做静态检查吗"),
    ("fact", "network", "The company VPN is WireGuard via vpn.corp.example.com; the config is in 1Password item \"wg-laptop\".",
     "vpn wireguard", "remote access tunnel vpn", "how do I connect to the company network from home",
     "where is the wireguard config",
     "公司 VPN 用 WireGuard，地址 vpn.corp.example.com，配置在 1Password 的“wg-laptop”条目里。", "公司 VPN", "VPN 连不上",
     "在家怎么连公司内网？", "WireGuard的配置在哪里"),
    ("fact", "on-call", "Pages go to the PagerDuty schedule \"platform-primary\"; escalation after 15 minutes.",
     "pagerduty escalation", "pager escalation policy", "when does an unanswered page escalate",
     "which pagerduty schedule receives alerts",
     "告警会发到 PagerDuty 的“platform-primary”排班，15 分钟没人响应就升级。", "PagerDuty 升级", "告警 升级策略",
     "告警多久没人响应会升级？", "告警发到哪个值班表"),
    ("decision", "python", "Default Python is 3.12; 3.13 only once numpy and psycopg wheels are out.",
     "default python 3.12", "python upgrade", "which python version should new projects use",
     "can we move to python 3.13 yet",
     "默认 Python 版本是 3.12；等 numpy 和 psycopg 的 wheel 出来再用 3.13。", "Python 3.12", "Python 升级",
     "新项目用哪个Python版本？", "现在能升级到Python 3.13吗"),
    ("rule", "logging", "Logs are structured JSON with a request_id field; never print().",
     "structured logs request_id", "logging format json", "what format should log lines have",
     "can I use print for debugging output in services",
     "日志用结构化 JSON，带 request_id 字段；不要用 print()。", "日志 request_id", "日志格式 JSON",
     "日志应该是什么格式？", "服务里能用print打日志吗"),
    ("fact", "dependencies", "Renovate opens dependency PRs on Mondays; merge patch updates the same week.",
     "renovate dependency", "automatic dependency updates bot", "when do dependency update PRs come in",
     "how fast should patch updates be merged",
     "Renovate 每周一提依赖升级的 PR，补丁版本当周合并。", "Renovate 依赖", "依赖升级 机器人",
     "依赖升级的PR什么时候来？", "补丁版本的升级多久要合并"),
    ("fact", "home", "Personal NAS is at 192.168.1.20 (Synology); the laptop backs up to it every night.",
     "nas synology", "nas ip address", "what's the IP of my NAS", "where does the laptop back up to",
     "个人 NAS 在 192.168.1.20（群晖），笔记本每晚备份到上面。", "NAS 群晖", "NAS 地址",
     "我的NAS的IP是多少？", "笔记本的备份存到哪里"),
    ("rule", "errors", "Don't swallow exceptions; log them with context and re-raise.",
     "swallow exceptions", "exception handling policy", "what should I do with an exception I can't handle",
     "is it ok to catch and ignore errors",
     "不要吞掉异常：带上下文记日志，然后重新抛出。", "吞掉 异常", "异常 处理方式",
     "处理不了的异常应该怎么办？", "可以把异常catch住直接忽略吗"),
    ("preference", "sql, style", "SQL: keywords upper case, table and column names snake_case, one comment line on top of each query.",
     "sql keywords snake_case", "sql formatting", "how do we format SQL queries", "should SQL keywords be upper case",
     "SQL 风格：关键字大写，表名和列名用 snake_case，每个查询上面写一行注释。", "SQL 关键字 大写", "SQL 格式",
     "SQL应该按什么风格写？", "SQL关键字要大写吗"),
    ("preference", "communication", "Keep explanations short; show the diff first, then one paragraph of why.",
     "explanations short diff", "answer style diff", "how long should your explanations be",
     "what should come first in an answer",
     "解释尽量简短：先给 diff，再用一段话说明原因。", "解释 diff", "回答风格 diff",
     "你的解释应该写多长？", "回答的时候先给什么"),
    ("rule", "docker", "Base images are pinned by digest, not by tag.",
     "base images digest", "docker image tag pin", "how do we pin docker base images", "is pinning to a tag enough",
     "基础镜像按 digest 固定，不按 tag。", "基础镜像 digest", "Docker 镜像 版本固定",
     "基础镜像应该怎么锁版本？", "镜像用tag固定可以吗"),
    ("rule", "typescript", "Shared TypeScript types live in packages/contracts; never copy them between apps.",
     "shared types contracts", "typescript interfaces location", "where do shared typescript types go",
     "can I copy a type from one app to another",
     "共享的 TypeScript 类型放在 packages/contracts，不要在应用之间复制。", "共享 类型 contracts", "类型定义 共享",
     "共享的TS类型放在哪里？", "类型可以在两个应用之间复制吗"),
    ("fact", "schedule", "Standup is at 10:00 Beijing time on weekdays; I'm offline after 19:00.",
     "standup 10:00", "daily meeting time", "what time is the daily standup", "when am I offline in the evening",
     "工作日 10 点（北京时间）站会；19 点以后我不在线。", "站会 北京时间", "站会 时间安排",
     "每天站会几点开？", "我晚上几点以后不在线"),
]

# Words that compete in MEMORY.md and SCRATCHPAD.md: project-level generalities that share
# the notes' vocabulary but answer none of the queries.
MEMORY_POOL = {
    "Constraints": (
        ["All database migrations must stay backward compatible for one release.",
         "Deploys go through the CI pipeline; production deploys need a green staging deploy first.",
         "The cache is never the source of truth; on a miss, read the database.",
         "Keep p95 latency under 300 ms at the API gateway.",
         "Staging and production share the same config keys; only values differ.",
         "Every new service exposes /healthz and /metrics.",
         "Background jobs must be idempotent: a retry may run them twice.",
         "Data of EU customers stays in the eu-central-1 region.",
         "Database schema changes are reviewed by two people."],
        ["数据库迁移必须向后兼容一个版本。", "部署只走 CI 流水线，生产部署前预发必须先部署成功。",
         "缓存不是数据源，未命中时以数据库为准。", "网关处接口 p95 延迟控制在 300 ms 以内。",
         "预发和生产的配置项保持一致，只有取值不同。", "每个新服务都要提供 /healthz 和 /metrics。",
         "后台任务必须幂等，重试可能让任务执行两次。", "欧盟客户的数据只能放在 eu-central-1。",
         "表结构变更需要两个人评审。"],
    ),
    "Decisions": (
        ["Use feature flags for every risky deploy.",
         "Queue consumers acknowledge only after the database commit.",
         "Cache keys carry a version prefix so a deploy can invalidate them.",
         "Staging data is refreshed from an anonymised production dump every Sunday.",
         "Read replicas serve reports; the primary database serves the app.",
         "Blue-green deploys for the API; rolling deploys for workers.",
         "Configuration comes from environment variables, never from files baked into images."],
        ["高风险的部署一律加功能开关。", "队列消费者在数据库提交之后才确认消息。",
         "缓存 key 带版本前缀，部署时可以整体失效。", "预发数据每周日从脱敏后的生产备份刷新。",
         "报表查只读从库，应用走主库。", "API 用蓝绿部署，worker 用滚动部署。", "配置从环境变量读取，不打进镜像。"],
    ),
    "Progress": (
        ["Moving the remaining cron jobs into the job scheduler.",
         "Cache hit rate alerting is done; dashboards next.",
         "Load test of the new gateway passed at 2k rps.",
         "Half of the slow database queries are fixed.",
         "The deploy pipeline now runs smoke tests on staging.",
         "Backups are verified by a weekly restore drill.",
         "Splitting the billing module out of the monolith."],
        ["正在把剩下的定时任务迁到任务调度器。", "缓存命中率告警做完了，下一步是看板。", "新网关压测通过，2k rps。",
         "数据库慢查询修了一半。", "部署流水线已经在预发跑冒烟测试。", "每周做一次恢复演练来验证备份。",
         "正在把单体里的计费模块拆成独立服务。"],
    ),
    "Lessons": (
        ["A deploy during the backup window doubled the database load.",
         "Cache stampede after a deploy: add jitter to TTLs.",
         "Long migrations must run outside the deploy, or the health check fails.",
         "A full disk on the log host silently stopped the log collector.",
         "Rotating a key without a grace period logged everyone out.",
         "Staging certificates expire too; monitor them like production."],
        ["在备份窗口内部署，数据库负载翻了一倍。", "部署后缓存雪崩：TTL 要加随机抖动。",
         "长时间的迁移要放在部署之外跑，否则健康检查会失败。", "日志主机磁盘满了，日志采集悄悄停了。",
         "换密钥不留过渡期，所有用户都被登出了。", "预发的证书也会过期，要和生产一样监控。"],
    ),
}
ZH_HEADINGS = {"Constraints": "技术约束", "Decisions": "关键决策", "Progress": "当前进度", "Lessons": "教训"}
SCRATCH_POOL = {
    "Focus": (["Moving the {job} to the new cluster, then watching the database load.",
               "Cutting the deploy time of the {service} under 5 minutes.",
               "Cleaning up cache keys that were written without a TTL.",
               "Getting the staging config in line with production."],
              ["把{job_zh}迁到新集群，然后观察数据库负载。", "把{service_zh}的部署时间压到 5 分钟以内。",
               "清理写入时没带 TTL 的缓存 key。", "让预发环境的配置和生产对齐。"]),
    "Open questions": (["Do we need a second read replica for reports?",
                        "Should staging and dev share one cache?",
                        "Is the queue retention long enough to replay a day?"],
                       ["报表要不要再加一个只读从库？", "预发和开发能不能共用一个缓存？", "队列的保留时间够不够回放一天？"]),
    "Next steps": (["Run the migration on staging", "Compare row counts after the backfill",
                    "Update the deploy runbook", "Add an alert on queue lag"],
                   ["在预发跑迁移", "回填后对比行数", "更新部署手册", "给队列积压加告警"]),
    "Done": (["Wrote the migration", "Bumped the cache client", "Fixed the flaky deploy test"],
             ["写好了迁移", "升级了缓存客户端", "修好了不稳定的部署测试"]),
    "Notes": (["The old table has 1.2M rows.", "The staging database holds a tenth of production's data."],
              ["旧表有 120 万行。", "预发数据库的数据量只有生产的十分之一。"]),
}

# Extra sentences that make a note read like a real one and add common words.
CONTEXT_EN = ["Checked with {person} on {date_en}.", "See the runbook in docs/ops.md.",
              "This bit us during the {month_en} release.", "Same on every environment unless noted.",
              "Double-check before the next deploy."]
CONTEXT_ZH = ["{person_zh} 在 {date_zh} 确认过。", "详见 docs/ops.md 运维手册。", "{month} 月发布的时候踩过这个坑。",
              "除非特别说明，各环境一致。", "下次部署前再核对一遍。"]
REMARK_ZH = ["记住这一条。", "这个坑踩过两次。", "团队约定，别改。", "上线前再确认一下。"]
REMARK_EN = ["Confirmed in the last review.", "Ask in #ops if unsure.", "Worth remembering.", "Still true as of this month."]

# One-key slips of a pinyin input method (same or near pinyin), for Chinese "typo" queries.
ZH_TYPOS = {
    "部署": "布署", "登录": "登陆", "密钥": "秘钥", "队列": "对列", "超时": "超市", "日志": "日至", "网关": "网管",
    "数据": "数剧", "缓存": "换存", "端口": "端扣", "迁移": "签移", "备份": "被份", "证书": "正书", "配置": "陪置",
    "版本": "板本", "集群": "急群", "监听": "监厅", "失败": "时败", "任务": "人物", "负责": "付责", "定时": "订时",
    "调度": "掉度", "回滚": "会滚", "看板": "看版", "监控": "监空", "预发": "预法", "升级": "生级", "锁定": "所定",
    "重置": "重制", "索引": "所引", "凭据": "平据", "执行": "直行", "发布": "发步", "主机": "主基", "压测": "压侧",
    "测试": "侧试", "提交": "题交", "合并": "和并", "许可证": "许可正", "依赖": "以赖", "延迟": "延时",
    "内存": "内村", "分片": "分篇", "刷新": "刷心", "连接池": "连结池", "限流": "限留", "空格": "空隔",
}
KEYBOARD_NEIGHBOURS = {
    "a": "sq", "b": "vn", "c": "xv", "d": "sf", "e": "wr", "f": "dg", "g": "fh", "h": "gj", "i": "uo", "j": "hk",
    "k": "jl", "l": "k", "m": "n", "n": "bm", "o": "ip", "p": "o", "q": "w", "r": "et", "s": "ad", "t": "ry",
    "u": "yi", "v": "cb", "w": "qe", "x": "zc", "y": "tu", "z": "x",
}

CJK = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
CJK_CHAR = re.compile(f"[{CJK}]")


# ---------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------


@dataclass
class Project:
    name: str
    zh: str
    products: dict[str, tuple[str, str, str]]
    domain: str


@dataclass
class Note:
    id: str
    project: str
    note_type: str
    lang: str
    body: str
    tags: list[str]
    created: datetime
    updated: datetime
    importance: int
    frame: str
    key: tuple[str, ...]
    slots: Slots
    status: str = "active"
    expires: date | None = None
    superseded_by: str | None = None
    subject: str | None = None
    predicate: str | None = None
    stale_reason: str | None = None  # None for the active note of a key

    @property
    def folder(self) -> str:
        return "archive" if self.status == "archived" else "notes"

    def relpath(self) -> str:
        slug = slug_of(self.body) or "note"
        return f"{self.project}/{self.folder}/{self.note_type}/{slug}-{self.id}.md"

    def render(self) -> str:
        lines = ["---", f"id: {self.id}", f"type: {self.note_type}", f"project: {self.project}",
                 f"importance: {self.importance}", f"tags: [{', '.join(self.tags)}]"]
        if self.subject and self.predicate:
            lines += [f"subject: {self.subject}", f"predicate: {self.predicate}"]
        lines += [f"created: {stamp(self.created)}", f"updated: {stamp(self.updated)}"]
        if self.expires:
            lines.append(f"expires: {self.expires.isoformat()}")
        lines.append(f"status: {self.status}")
        if self.superseded_by:
            lines.append(f"superseded_by: {self.superseded_by}")
        lines += ["source: cli", "---", self.body, ""]
        return "\n".join(lines)


Templates = dict[str, Sequence[str]]  # language -> templates


@dataclass
class Frame:
    """One kind of fact: how its keys are enumerated, its slots drawn and its text rendered."""

    name: str
    note_type: str
    weight: float
    keys: Callable[[Project], list[tuple[str, ...]]]
    draw: Callable[[random.Random, Project, tuple[str, ...], datetime], Slots]
    notes: Templates
    queries: dict[str, Templates]
    tags: Callable[[Slots, str, random.Random], list[str]]
    stale: Templates | None = None  # how an older version reads; else the same templates redrawn
    allow_stale: bool = True
    mix_slots: bool = True  # mixed notes: English words swapped into the Chinese template
    subject: Callable[[Slots], tuple[str, str]] | None = None


# ---------------------------------------------------------------------------------------
# Slot helpers
# ---------------------------------------------------------------------------------------


def time_slots(moment: datetime, rng: random.Random) -> Slots:
    day = moment.date()
    return {
        "date_en": rng.choice([day.isoformat(), f"{MONTHS[day.month - 1]} {day.day}", f"{day.day} {MONTHS[day.month - 1][:3]} {day.year}"]),
        "date_zh": rng.choice([day.isoformat(), f"{day.month} 月 {day.day} 日", f"{day.month}月{day.day}日"]),
        "month_en": MONTHS[day.month - 1], "month": str(day.month), "year": str(day.year),
    }


def person_slots(rng: random.Random, suffix: str = "") -> Slots:
    en, zh, first = rng.choice(PEOPLE)
    return {f"person{suffix}": en, f"person{suffix}_zh": zh, f"first{suffix}": first}


def env_slots(env: str) -> Slots:
    name, zh, alt, zh_alt, short = next(e for e in ENVS if e[0] == env)
    return {"env": name, "env_zh": zh, "env_alt": alt, "env_zh_alt": zh_alt, "env_short": short}


def comp_slots(project: Project, comp_name: str) -> Slots:
    comp = COMPONENT[comp_name]
    product, version, alias = project.products[comp_name]
    return {"comp": comp.name, "comp_kw": comp.kw, "comp_zh": comp.zh, "comp_tag": COMPONENT_TAG[comp.name],
            "product": f"{product} {version}",
            "product_name": product, "product_alias": alias, "default_port": str(comp.port)}


def common_slots(rng: random.Random, project: Project, moment: datetime) -> Slots:
    return {"project": project.name, "proj_zh": project.zh, "domain": project.domain,
            **time_slots(moment, rng), **person_slots(rng)}


def fmt(template: str, slots: Slots) -> str:
    return template.format(**slots)


def tidy(text: str) -> str:
    """Fold spaces and drop the ones a Chinese writer would not put around full-width punctuation."""
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r" ?([，。；：、）”」？！])", r"\1", text)
    return re.sub(r"([（“「]) ?", r"\1", text)


def pangu(text: str) -> str:
    """A space between Chinese and Latin text (`预发 API 网关`), the way many people write it."""
    text = re.sub(f"([{CJK}])([A-Za-z0-9`])", r"\1 \2", text)
    return re.sub(f"([A-Za-z0-9`%])([{CJK}])", r"\1 \2", text)


def unspace_cjk(text: str) -> str:
    """Chinese is typed without spaces next to Chinese characters (`预发API网关`)."""
    text = re.sub(f"(?<=[{CJK}])\\s+", "", text)
    return re.sub(f"\\s+(?=[{CJK}])", "", text)


# Names that stay lower case at the start of a sentence.
LOWER_NAMES = {"numpy", "webpack", "psycopg", "librdkafka", "pgcat", "sqlc", "structlog", "pino", "boto3", "urllib3"}


def capital(text: str) -> str:
    """Capitalise a sentence that starts with a plain lower-case word (not `db-stg-01`, not `numpy`)."""
    first = re.match(r"[a-z]+(?=[\s:;,])", text)
    if not first or first.group() in LOWER_NAMES:
        return text
    return text[:1].upper() + text[1:]


# ---------------------------------------------------------------------------------------
# Frames
# ---------------------------------------------------------------------------------------


def env_comp_keys(project: Project) -> list[tuple[str, ...]]:
    return [(env[0], comp.name) for env in ENVS for comp in COMPONENTS]


def draw_port(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    comp = COMPONENT[key[1]]
    port = rng.choice([comp.port + rng.randint(1, 19), 10000 + comp.port % 10000, rng.randint(20, 64) * 100 + rng.choice([0, 1, 43, 80])])
    return {**common_slots(rng, project, moment), **env_slots(key[0]), **comp_slots(project, key[1]), "port": str(port)}


def draw_host(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    comp = COMPONENT[key[1]]
    env = env_slots(key[0])
    host = f"{comp.host}-{env['env_short']}-{rng.randint(1, 12):02d}" + rng.choice(["", ".internal", f".{project.name}.lan"])
    return {**common_slots(rng, project, moment), **env, **comp_slots(project, key[1]), "host": host,
            "region": rng.choice(REGIONS), "bastion": f"bastion-{rng.randint(1, 3)}.{project.domain}",
            "cpu": str(rng.choice([2, 4, 8, 16])), "ram": str(rng.choice([4, 8, 16, 32, 64]))}


def env_comp_tags(slots: Slots, lang: str, rng: random.Random) -> list[str]:
    options = [slots["comp_tag"], slots["env"], slots["product_alias"]]
    if lang == "zh" and rng.random() < 0.5:
        options = [slots["comp_zh"].replace(" ", ""), slots["env_zh"]]
    return options[: rng.choice([0, 1, 2, 2, 3])]


def draw_switch(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    comp = COMPONENT[key[0]]
    slots = {**common_slots(rng, project, moment), **comp_slots(project, key[0])}
    olds = [p for p in comp.products if p[0] != slots["product_name"]]
    old = rng.choice(olds) if olds else (slots["product_name"], "legacy", slots["product_alias"])
    why_en, why_zh = rng.choice([
        ("the old one kept dropping connections under load", "旧的在高负载下经常断连接"),
        ("the license changed", "许可证变了"), ("ops wanted one fewer moving part", "运维想少维护一个组件"),
        ("it was cheaper on the managed plan", "托管版更便宜"), ("we needed replication", "需要主从复制")])
    return {**slots, "old": f"{old[0]} {old[1]}", "old_name": old[0], "new": slots["product"],
            "new_name": slots["product_name"], "why": why_en, "why_zh": why_zh}


def job_keys(project: Project) -> list[tuple[str, ...]]:
    return [(job[0],) for job in JOBS]


def job_slots(job_name: str) -> Slots:
    en, kw, zh, zh_kw = next(j for j in JOBS if j[0] == job_name)
    return {"job": en, "job_kw": kw, "job_zh": zh, "job_zh_kw": zh_kw}


def draw_job_move(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    new, old = rng.sample(CLUSTERS, 2)
    return {**common_slots(rng, project, moment), **job_slots(key[0]), "cluster": new, "old_cluster": old}


def draw_schedule(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    hour, minute = rng.randint(0, 5), rng.choice([0, 15, 30, 45])
    return {**common_slots(rng, project, moment), **job_slots(key[0]), "time": f"{hour:02d}:{minute:02d}",
            "cron": f"{minute} {hour} * * *", "n": str(rng.randint(3, 90)), "end": f"{hour + 2:02d}:00"}


def job_tags(slots: Slots, lang: str, rng: random.Random) -> list[str]:
    tags = ["cron", "jobs", slots["job_kw"].split()[0]] if lang != "zh" or rng.random() < 0.5 else ["定时任务", "集群"]
    return tags[: rng.choice([0, 1, 2])]


def draw_owner(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    en, kw, zh = next(a for a in AREAS if a[0] == key[0])
    slots = {**common_slots(rng, project, moment), "area": en, "area_kw": kw, "area_zh": zh}
    while True:
        second = person_slots(rng, "2")
        if second["person2"] != slots["person"]:
            return {**slots, **second}


def draw_deploy(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    en, kw, zh = next(s for s in SERVICES if s[0] == key[0])
    cause, cause_zh, fix, fix_zh = rng.choice(DEPLOY_CAUSES)
    mem = rng.choice([256, 512, 1024])
    values = {"table": rng.choice(TABLES), "m": str(rng.randint(3, 9)), "domain": project.domain,
              "host": f"build-{rng.randint(1, 4):02d}", "mem": str(mem), "mem2": str(mem * 2), "lib": rng.choice(NPM_LIBS)}
    return {**common_slots(rng, project, moment), "service": en, "service_kw": kw, "service_zh": zh,
            "cause": fmt(cause, values), "cause_zh": fmt(cause_zh, values), "fix": fmt(fix, values),
            "fix_zh": fmt(fix_zh, values), "n": str(rng.randint(4, 40))}


def config_keys(project: Project) -> list[tuple[str, ...]]:
    return [(p[0], p[1]) for p in PARAMS]


def draw_config(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    _, param, kw, alt, zh, zh_alt, values = next(p for p in PARAMS if (p[0], p[1]) == key)
    value, value_zh = rng.choice(values)
    slots = {**common_slots(rng, project, moment), **comp_slots(project, key[0]), "param": param, "param_kw": kw,
             "param_alt": alt, "param_zh": zh, "param_zh_alt": zh_alt, "value": value, "value_zh": value_zh}
    why, why_zh = rng.choice(CONFIG_WHY)
    incident, incident_zh = rng.choice(INCIDENTS)
    return {**slots, "why": fmt(why, slots), "why_zh": fmt(why_zh, slots), "incident": fmt(incident, slots),
            "incident_zh": fmt(incident_zh, slots)}


def draw_decision(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    purpose, kw, alt, zh, zh_alt, pairs = next(p for p in PURPOSES if p[0] == key[0])
    chosen, rejected = rng.choice(pairs)
    reason, reason_zh = rng.choice(DECISION_REASONS)
    return {**common_slots(rng, project, moment), "purpose": purpose, "purpose_kw": kw, "purpose_alt": alt,
            "purpose_zh": zh, "purpose_zh_alt": zh_alt, "A": chosen, "B": rejected, "reason": reason,
            "reason_zh": reason_zh}


def draw_secret(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    en, zh, slug = next(s for s in SECRET_SERVICES if s[0] == key[0])
    env = env_slots(rng.choice(["staging", "production"]))
    return {**common_slots(rng, project, moment), **env, "svc": en, "svc_zh": zh, "svc_slug": slug,
            "vault": rng.choice(VAULTS), "n": str(rng.choice([30, 60, 90]))}


def draw_dashboard(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    en, zh = next(t for t in THINGS if t[0] == key[0])
    uid = "".join(rng.choice("abcdefghjkmnpqrstuvwxyz0123456789") for _ in range(9))
    slug = en.lower().replace(" ", "-")
    return {**common_slots(rng, project, moment), "thing": en, "thing_zh": zh,
            "url": f"https://grafana.{project.domain}/d/{uid}/{project.name}-{slug}",
            "title": f"{project.name} / {capital(en)}", "folder": rng.choice(["SRE", "Backend", project.name])}


def draw_pin(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
    lib, version, reason, reason_zh = next(item for item in LIBS if item[0] == key[0])
    return {**common_slots(rng, project, moment), "lib": lib, "ver": version, "reason": reason, "reason_zh": reason_zh}


def item_draw(table: Sequence[Sequence[object]], names: Sequence[str]) -> Callable[[random.Random, Project, tuple[str, ...], datetime], Slots]:
    """Slots of a written-out item (rule, how-to, pitfall), looked up by its index in the table."""

    def draw(rng: random.Random, project: Project, key: tuple[str, ...], moment: datetime) -> Slots:
        item = dict(zip(names, table[int(key[0])], strict=True))
        slots = {**common_slots(rng, project, moment), "n": str(rng.choice([60, 90, 120, 300, 600])),
                 "m": str(rng.choice([30, 45, 50])), "minutes": str(rng.randint(2, 25))}
        for name, value in item.items():
            if name == "cmds" and isinstance(value, tuple):  # a how-to's command now, and an older one
                slots["cmd"], slots["old_cmd"] = (fmt(str(c), slots) for c in value)
            elif isinstance(value, str):
                slots[name] = value
        for name in ("text", "text_zh"):  # pitfalls carry numbers of their own
            if name in slots:
                slots[name] = fmt(slots[name], slots)
        if "instead" in slots:
            slots["Instead"] = capital(slots["instead"])
        return slots

    return draw


def index_keys(table: Sequence[object]) -> Callable[[Project], list[tuple[str, ...]]]:
    return lambda project: [(str(i),) for i in range(len(table))]


def fixed_tags(*options: Sequence[str]) -> Callable[[Slots, str, random.Random], list[str]]:
    def tags(slots: Slots, lang: str, rng: random.Random) -> list[str]:
        # Chinese tags only on notes written (partly) in Chinese.
        fitting = [o for o in options if lang != "en" or not any(CJK_CHAR.search(t) for t in o)]
        return list(rng.choice(fitting))[: rng.choice([1, 2, 2])]

    return tags


def q(en: Sequence[str], zh: Sequence[str]) -> Templates:
    return {"en": en, "zh": zh}


FRAMES: list[Frame] = [
    Frame(
        "port", "fact", 26, env_comp_keys, draw_port,
        notes=q(["The {env} {comp} listens on port {port}.",
                 "{env} {comp} ({product}) runs on port {port}, not the default {default_port}.",
                 "Port for the {env} {comp} is {port}; the firewall only opens it to the VPN."],
                ["{env_zh}环境的{comp_zh}监听 {port} 端口。",
                 "{env_zh}的{comp_zh}（{product}）跑在 {port} 端口，不是默认的 {default_port}。",
                 "{env_zh}{comp_zh}端口是 {port}，防火墙只对 VPN 开放。"]),
        queries={
            "keyword": q(["{env} {comp_kw} port", "{product_name} {env} port"], ["{env_zh} {comp_zh} 端口"]),
            "partial": q(["{env} {product_alias} port", "{env_alt} {comp_kw} port number"],
                         ["{env_zh_alt} {comp_zh} 端口号", "{product_alias} {env_zh} 端口号"]),
            "question": q(["what port does the {env} {comp} listen on", "which port is the {env} {comp} listening on",
                           "what's the port number for the {comp} in {env}", "on which port can I reach the {env} {comp}"],
                          ["{env_zh}的{comp_zh}监听哪个端口？", "{env_zh}环境{comp_zh}的端口号是多少",
                           "{comp_zh}在{env_zh}上用的哪个端口？"]),
        },
        tags=env_comp_tags, subject=lambda s: (f"{s['env']}-{s['comp'].replace(' ', '-').lower()}", "port"),
    ),
    Frame(
        "host", "fact", 20, env_comp_keys, draw_host,
        notes=q(["The {env} {comp} runs on host {host}.",
                 "{env} {comp} host: {host} ({region}); SSH through {bastion}.",
                 "{host} is the {env} {comp} box, {cpu} vCPU / {ram} GB."],
                ["{env_zh}环境的{comp_zh}部署在主机 {host} 上。",
                 "{env_zh}{comp_zh}的主机是 {host}（{region}），要先登跳板机 {bastion}。",
                 "{host} 是{env_zh}的{comp_zh}服务器，{cpu} 核 {ram} GB。"]),
        queries={
            "keyword": q(["{env} {comp_kw} host", "{env} {comp_kw} box"], ["{env_zh} {comp_zh} 主机", "{env_zh} {comp_zh} 服务器"]),
            "partial": q(["{env} {comp_kw} hostname", "{env} {product_alias} server"],
                         ["{env_zh} {comp_zh} 机器名", "{env_zh_alt} {comp_zh} 地址"]),
            "question": q(["which host is the {env} {comp} on", "where does the {env} {comp} run",
                           "what machine hosts the {comp} in {env}", "what's the hostname of the {env} {comp}"],
                          ["{env_zh}的{comp_zh}在哪台机器上？", "{env_zh}环境的{comp_zh}部署在哪",
                           "{comp_zh}在{env_zh}的主机名是什么", "{env_zh}{comp_zh}是哪台服务器"]),
        },
        tags=env_comp_tags, subject=lambda s: (f"{s['env']}-{s['comp'].replace(' ', '-').lower()}", "host"),
    ),
    Frame(
        "switch", "decision", 8, lambda p: [(c.name,) for c in COMPONENTS], draw_switch,
        notes=q(["The {comp} moved from {old} to {new} in {month_en} {year}.",
                 "We replaced {old} with {new} as the {comp} on {date_en}; {why}.",
                 "Switched the {comp} to {new} ({month_en} {year}) — {old} is gone."],
                ["{proj_zh}的{comp_zh}在 {month} 月换成了 {new}。",
                 "{date_zh}把{comp_zh}从 {old} 换成了 {new}，{why_zh}。",
                 "{comp_zh}已经从 {old} 迁到 {new}（{year} 年 {month} 月）。"]),
        stale=q(["The {comp} is {old} for now; moving to {new_name} is planned.",
                 "We run {old} as the {comp}; {new_name} is being evaluated."],
                ["{comp_zh}目前用 {old}，计划换成 {new_name}。", "{comp_zh}还是 {old}，{new_name} 在评估中。"]),
        queries={
            "keyword": q(["{comp_kw} {new_name}", "{comp_kw} {old_name} {new_name}"],
                         ["{comp_zh} {new_name}", "{comp_zh} {old_name} {new_name}"]),
            "partial": q(["{comp_kw} migration {new_name}", "{old_name} replacement"], ["{comp_zh}迁移 {new_name}", "{old_name} 替换"]),
            "question": q(["when did we switch the {comp} to {new_name}", "what did we use for the {comp} before {new_name}",
                           "when was {old_name} replaced as our {comp}", "why did we move the {comp} off {old_name}"],
                          ["{proj_zh}的{comp_zh}是什么时候换成{new_name}的？", "{comp_zh}之前用的是什么？",
                           "我们什么时候把{old_name}换掉的", "为什么{comp_zh}不用{old_name}了"]),
        },
        tags=lambda s, lang, rng: [s["comp_tag"], s["product_alias"]][: rng.choice([0, 1, 2])],
        subject=lambda s: (s["comp"].replace(" ", "-").lower(), "product"),
    ),
    Frame(
        "job_move", "fact", 9, job_keys, draw_job_move,
        notes=q(["{job} moved to cluster {cluster} on {date_en}.",
                 "Since {date_en} the {job} runs on the {cluster} cluster instead of {old_cluster}.",
                 "Migrated the {job} from {old_cluster} to {cluster} ({date_en}); {old_cluster} is being drained."],
                ["{job_zh}在 {date_zh} 迁移到了 {cluster} 集群。",
                 "从 {date_zh} 起，{job_zh}改在 {cluster} 集群上跑，不再用 {old_cluster}。",
                 "{job_zh}已从 {old_cluster} 迁到 {cluster}（{date_zh}）。"]),
        stale=q(["The {job} runs on cluster {old_cluster}.", "{job} lives on the {old_cluster} cluster."],
                ["{job_zh}跑在 {old_cluster} 集群上。", "{job_zh}部署在 {old_cluster} 集群。"]),
        queries={
            "keyword": q(["{job_kw} cluster", "{job_kw} moved"], ["{job_zh_kw} 集群", "{job_zh_kw} 迁移"]),
            "partial": q(["{job_kw} relocation", "{job_kw} new infra"], ["{job_zh_kw} 搬迁", "{job_zh_kw} 新集群"]),
            "question": q(["when did we move the {job} to the new cluster", "which cluster does the {job} run on now",
                           "where is the {job} running these days", "did the {job} get migrated off {old_cluster}"],
                          ["{job_zh}是什么时候搬到新集群的？", "{job_zh}现在在哪个集群上跑", "{job_zh_kw}迁到哪个集群了？",
                           "{job_zh}还在{old_cluster}上吗"]),
        },
        tags=job_tags,
    ),
    Frame(
        "schedule", "fact", 9, job_keys, draw_schedule,
        notes=q(["The {job} is scheduled daily at {time} UTC.",
                 "{job}: cron `{cron}` ({time} UTC), takes about {n} minutes.",
                 "The {job} starts every night at {time} UTC and must finish before {end} UTC."],
                ["{job_zh}每天 {time}（UTC）执行。",
                 "{job_zh}的 cron 是 `{cron}`（UTC {time}），大约跑 {n} 分钟。",
                 "{job_zh}每晚 {time} UTC 开始，必须在 {end} 之前跑完。"]),
        queries={
            "keyword": q(["{job_kw} schedule", "{job_kw} cron"], ["{job_zh_kw} 每天", "{job_zh_kw} cron", "{job_zh_kw} 每晚"]),
            "partial": q(["{job_kw} start time", "{job_kw} timing"], ["{job_zh_kw} 定时 几点", "{job_zh_kw} 执行时间"]),
            "question": q(["what time does the {job} run", "when is the {job} scheduled", "at what hour does the {job} kick off"],
                          ["{job_zh}每天几点跑？", "{job_zh_kw}是什么时候执行的", "{job_zh}几点开始"]),
        },
        tags=job_tags,
    ),
    Frame(
        "owner", "fact", 10, lambda p: [(a[0],) for a in AREAS], draw_owner,
        notes=q(["{person} owns the {area}; ask {first} before changing it.",
                 "{area}: the owner is {person}, backup {person2}.",
                 "{person} is responsible for the {area} since {month_en}."],
                ["{area_zh}由{person_zh}负责，改之前先找{person_zh}确认。",
                 "{area_zh}归{person_zh}负责，{person2_zh}是备份。",
                 "从 {month} 月起{area_zh}由{person_zh}负责。"]),
        queries={
            "keyword": q(["{area_kw} owner", "{area_kw} responsible", "{area_kw} owns"], ["{area_zh} 负责"]),
            "partial": q(["{area_kw} contact person", "{area_kw} maintainer"], ["{area_zh} 负责人", "{area_zh} 找谁"]),
            "question": q(["who is responsible for the {area}", "who should I ask before touching the {area}",
                           "who owns the {area} these days"],
                          ["谁负责{area_zh}？", "改{area_zh}之前要找谁", "{area_zh}现在归谁管"]),
        },
        tags=fixed_tags(["ownership"], ["team", "ownership"], ["people"]),
    ),
    Frame(
        "deploy_failure", "error", 6, lambda p: [(s[0],) for s in SERVICES], draw_deploy,
        notes=q(["The {date_en} deploy of the {service} failed because {cause}; rolled back after {n} minutes.",
                 "Deploy failure ({date_en}, {service}): {cause}. {fix}.",
                 "Last {service} deploy failed: {cause}."],
                ["{date_zh}{service_zh}部署失败，原因是{cause_zh}，{n} 分钟后回滚。",
                 "上次{service_zh}发布失败：{cause_zh}。{fix_zh}。",
                 "{service_zh}在 {date_zh} 部署失败，{cause_zh}。"]),
        queries={
            "keyword": q(["{service_kw} deploy failed", "{service_kw} deploy failure"], ["{service_zh} 部署失败", "{service_zh} 发布失败"]),
            "partial": q(["{service_kw} rollout error", "{service_kw} release broke"], ["{service_zh} 上线 报错", "{service_zh} 发版 出问题"]),
            "question": q(["why did the last {service} deploy fail", "what broke the {service} deployment",
                           "what was the reason the {service} deploy failed"],
                          ["{service_zh}上次部署失败的原因是什么", "{service_zh}发布为什么失败了？", "上次{service_zh}部署为啥挂了"]),
        },
        tags=fixed_tags(["deploy", "incident"], ["deploy"], ["部署", "故障"]),
    ),
    Frame(
        "config", "fact", 16, config_keys, draw_config,
        notes=q(["The {comp} {param} is {value}.",
                 "{comp} {param}: {value} — {why}.",
                 "Set the {comp} {param} to {value} after {incident}."],
                ["{comp_zh}的{param_zh}设为 {value_zh}。",
                 "{comp_zh}{param_zh}：{value_zh}，{why_zh}。",
                 "{incident_zh}之后把{comp_zh}的{param_zh}调成了 {value_zh}。"]),
        queries={
            "keyword": q(["{comp_kw} {param_kw}", "{product_alias} {param_kw}"], ["{comp_zh} {param_zh}"]),
            "partial": q(["{product_alias} {param_alt}", "{comp_kw} {param_alt}"], ["{comp_zh} {param_zh_alt}", "{product_name} {param_zh_alt}"]),
            "question": q(["what is the {param} of the {comp}", "what did we set the {comp} {param} to",
                           "what value do we use for {param} on the {comp}"],
                          ["{comp_zh}的{param_zh}是多少？", "{comp_zh}{param_zh}设的多少", "我们把{comp_zh}的{param_zh}调成多少了"]),
        },
        tags=lambda s, lang, rng: [s["comp_tag"], "config"][: rng.choice([0, 1, 2])],
        subject=lambda s: (s["comp"].replace(" ", "-").lower(), s["param_kw"].replace(" ", "_")),
    ),
    Frame(
        "decision", "decision", 10, lambda p: [(x[0],) for x in PURPOSES], draw_decision,
        notes=q(["We chose {A} over {B} for {purpose} because {reason}.",
                 "Decision ({date_en}): {purpose} uses {A}, not {B}; {reason}."],
                ["{purpose_zh}选了 {A} 而不是 {B}，因为{reason_zh}。",
                 "决定：{purpose_zh}统一用 {A}，不用 {B}，原因是{reason_zh}。"]),
        queries={
            "keyword": q(["{purpose_kw} {A}", "{A} {B}"], ["{purpose_zh} {A}", "{A} {B}"]),
            "partial": q(["{purpose_alt} {A}"], ["{purpose_zh_alt} {A}"]),
            "question": q(["why did we pick {A} for {purpose}", "why are we using {A} instead of {B}",
                           "what did we decide to use for {purpose}", "which tool do we use for {purpose} and why"],
                          ["{purpose_zh}为什么选{A}？", "为什么我们用{A}而不用{B}", "{purpose_zh}最后决定用什么了？",
                           "{purpose_zh}用的是哪个工具"]),
        },
        tags=fixed_tags(["architecture"], ["tooling"], ["选型"]),
    ),
    Frame(
        "rule", "rule", 10, index_keys(RULES), item_draw(RULES, RULE_FIELDS),
        notes=q(["Never {act}; {instead}.", "Rule: don't {act} — {instead}.", "We do not {act}. {Instead}."],
                ["禁止{act_zh}，{instead_zh}。", "规定：不要{act_zh}；{instead_zh}。", "不能{act_zh}。{instead_zh}。"]),
        queries={"keyword": q(["{kw}"], ["{kw_zh}"]), "partial": q(["{part}"], ["{part_zh}"]),
                 "question": q(["{q0}", "{q1}"], ["{q0_zh}", "{q1_zh}"])},
        tags=fixed_tags(["process"], ["safety", "process"], ["规范"]), allow_stale=False, mix_slots=False,
    ),
    Frame(
        "secret", "fact", 8, lambda p: [(s[0],) for s in SECRET_SERVICES], draw_secret,
        notes=q(["The {svc} API key lives in Vault at `secret/{project}/{svc_slug}`.",
                 "{svc} credentials are in 1Password vault \"{vault}\", item \"{svc} {env}\"; rotate every {n} days.",
                 "{svc} key for {env}: Vault path `kv/{project}/{env}/{svc_slug}`, read by the deploy job."],
                ["{svc_zh} 的 API 密钥放在 Vault 的 `secret/{project}/{svc_slug}`。",
                 "{svc_zh} 的凭据在 1Password 的“{vault}”保险库，条目“{svc} {env}”，每 {n} 天轮换一次。",
                 "{env_zh}环境的 {svc_zh} 密钥在 Vault `kv/{project}/{env}/{svc_slug}`，部署任务会读取。"]),
        queries={
            "keyword": q(["{svc} key", "{svc} credentials", "{svc} vault"], ["{svc_zh} 密钥", "{svc_zh} 凭据"]),
            "partial": q(["{svc} token location", "{svc} secret"], ["{svc_zh} token", "{svc_zh} 账号 存放"]),
            "question": q(["where is the {svc} API key stored", "where do we keep the {svc} credentials",
                           "how do I get the {svc} key"],
                          ["{svc_zh}的密钥存在哪里？", "{svc_zh}的key放哪了", "去哪里找{svc_zh}的凭据"]),
        },
        tags=fixed_tags(["secrets"], ["secrets", "vault"], ["密钥"]),
    ),
    Frame(
        "howto", "skill", 11, index_keys(TASKS), item_draw(TASKS, TASK_FIELDS),
        notes=q(["To {task}, run `{cmd}`.", "How to {task}: `{cmd}` (takes about {minutes} minutes).",
                 "{task}: `{cmd}`; do it from the repo root."],
                ["{task_zh}：执行 `{cmd}`。", "要{task_zh}，跑 `{cmd}` 就行，大约 {minutes} 分钟。",
                 "{task_zh}的命令是 `{cmd}`，在仓库根目录执行。"]),
        stale=q(["To {task}, run `{old_cmd}`.", "How to {task}: `{old_cmd}`."],
                ["{task_zh}：执行 `{old_cmd}`。", "要{task_zh}，跑 `{old_cmd}`。"]),
        queries={"keyword": q(["{kw}"], ["{kw_zh}"]), "partial": q(["{part}"], ["{part_zh}"]),
                 "question": q(["{q0}", "{q1}"], ["{q0_zh}", "{q1_zh}"])},
        tags=fixed_tags(["howto"], ["commands"], ["命令"]), mix_slots=False,
    ),
    Frame(
        "pin", "decision", 10, lambda p: [(lib[0],) for lib in LIBS], draw_pin,
        notes=q(["{lib} is pinned to {ver} because {reason}.", "Keep {lib} at {ver}: {reason}; revisit after {month_en}.",
                 "Do not upgrade {lib} past {ver} yet — {reason}."],
                ["{lib} 锁定在 {ver}，因为{reason_zh}。", "{lib} 先别升级，固定在 {ver}：{reason_zh}。",
                 "暂时不要把 {lib} 升到 {ver} 以上，{reason_zh}。"]),
        queries={
            "keyword": q(["{lib} pinned", "{lib} {ver}", "{lib} upgrade"], ["{lib} 锁定", "{lib} 升级", "{lib} 固定"]),
            "partial": q(["{lib} version constraint", "{lib} upgrade blocked"], ["{lib} 版本限制", "{lib} 不能升"]),
            "question": q(["why is {lib} pinned to {ver}", "why can't we upgrade {lib}", "which version of {lib} are we on",
                           "can I bump {lib} to the latest release"],
                          ["{lib}为什么不能升级？", "{lib}现在锁的是哪个版本", "为什么{lib}要固定在{ver}", "能把{lib}升到最新版吗"]),
        },
        tags=fixed_tags(["dependencies"], ["dependencies", "versions"], ["依赖"]), allow_stale=False,
    ),
    Frame(
        "pitfall", "error", 8, index_keys(PITFALLS), item_draw(PITFALLS, PITFALL_FIELDS),
        notes=q(["{text}"], ["{text_zh}"]),
        queries={"keyword": q(["{kw}"], ["{kw_zh}"]), "partial": q(["{part}"], ["{part_zh}"]),
                 "question": q(["{q0}", "{q1}"], ["{q0_zh}", "{q1_zh}"])},
        tags=fixed_tags(["pitfall"], ["bug"], ["踩坑"]), allow_stale=False, mix_slots=False,
    ),
    Frame(
        "dashboard", "fact", 6, lambda p: [(t[0],) for t in THINGS], draw_dashboard,
        notes=q(["The Grafana dashboard for {thing} is {url}.", "{thing} is charted on the \"{title}\" dashboard: {url}",
                 "{thing}: see {url} (Grafana, folder {folder})."],
                ["{thing_zh}的 Grafana 看板在 {url}。", "{thing_zh}看“{title}”这个面板：{url}",
                 "{thing_zh}的监控图在 {url}（Grafana 的 {folder} 目录）。"]),
        queries={
            "keyword": q(["{thing} dashboard", "{thing} grafana"], ["{thing_zh} 看板", "{thing_zh} Grafana", "{thing_zh} 面板"]),
            "partial": q(["{thing} chart link", "{thing} graphs"], ["{thing_zh} 监控图表", "{thing_zh} 图表 链接"]),
            "question": q(["where can I see the {thing}", "is there a dashboard for {thing}", "what's the link to the {thing} graphs"],
                          ["{thing_zh}在哪里看？", "{thing_zh}有没有监控面板", "{thing_zh}的图表链接是什么"]),
        },
        tags=fixed_tags(["monitoring"], ["grafana", "monitoring"], ["监控"]),
    ),
]
GLOBAL_FRAME = Frame(
    "global", "preference", 0, index_keys(GLOBAL_ITEMS), item_draw(GLOBAL_ITEMS, GLOBAL_FIELDS),
    notes=q(["{text}"], ["{text_zh}"]),
    queries={"keyword": q(["{kw}"], ["{kw_zh}"]), "partial": q(["{part}"], ["{part_zh}"]),
             "question": q(["{q0}", "{q1}"], ["{q0_zh}", "{q1_zh}"])},
    tags=lambda s, lang, rng: [t.strip() for t in s["tags"].split(",")], allow_stale=False, mix_slots=False,
)
FRAME_BY_NAME = {f.name: f for f in [*FRAMES, GLOBAL_FRAME]}


# ---------------------------------------------------------------------------------------
# Rendering notes
# ---------------------------------------------------------------------------------------


def render_text(rng: random.Random, frame: Frame, slots: Slots, lang: str, templates: Templates) -> str:
    text = mix_text(rng, frame, slots, lang, templates)
    return pangu(text) if lang != "en" and rng.random() < 0.7 else text


def mix_text(rng: random.Random, frame: Frame, slots: Slots, lang: str, templates: Templates) -> str:
    if lang == "en":
        return capital(fmt(rng.choice(templates["en"]), slots))
    if lang == "zh":
        return tidy(fmt(rng.choice(templates["zh"]), slots))
    # Mixed: what people actually write — English words inside a Chinese sentence, or one
    # language with a remark in the other.
    roll = rng.random()
    if frame.mix_slots and roll < 0.6:
        swapped = dict(slots)
        for name in slots:
            if name.endswith("_zh") and name[:-3] in slots and rng.random() < 0.6:
                swapped[name] = f" {slots[name[:-3]]} "
        return tidy(fmt(rng.choice(templates["zh"]), swapped))
    if roll < 0.8:
        return capital(fmt(rng.choice(templates["en"]), slots)) + " " + rng.choice(REMARK_ZH)
    return tidy(fmt(rng.choice(templates["zh"]), slots)) + " " + rng.choice(REMARK_EN)


def with_context(rng: random.Random, text: str, slots: Slots, lang: str) -> str:
    """A second sentence on a third of the notes: notes are rarely one bare fact."""
    if rng.random() >= 0.33:
        return text
    if lang == "zh" or (lang == "mixed" and CJK_CHAR.search(text[:1] or "")):
        return tidy(text + fmt(rng.choice(CONTEXT_ZH), slots))
    return text + " " + fmt(rng.choice(CONTEXT_EN), slots)


def importance_of(rng: random.Random, note_type: str) -> int:
    base = {"fact": 5, "decision": 7, "rule": 8, "preference": 6, "skill": 5, "error": 7}[note_type]
    return max(1, min(10, base + rng.choice([-2, -1, 0, 0, 0, 1, 2])))


class Builder:
    """Makes the notes of a store: one active note per key, some stale siblings."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.notes: list[Note] = []
        self.ids: set[str] = set()

    def new_id(self, moment: datetime) -> str:
        while True:
            candidate = note_id(self.rng, moment)
            if candidate not in self.ids:
                self.ids.add(candidate)
                return candidate

    def moment(self, start: datetime, end: datetime) -> datetime:
        seconds = int((end - start).total_seconds())
        return start + timedelta(seconds=self.rng.randint(0, max(0, seconds)), milliseconds=self.rng.randint(0, 999))

    def make(self, frame: Frame, project: Project, key: tuple[str, ...], lang: str, created: datetime,
             slots: Slots, templates: Templates) -> Note:
        rng = self.rng
        body = with_context(rng, render_text(rng, frame, slots, lang, templates), slots, lang)
        tags = frame.tags(slots, lang, rng)
        note_type = slots.get("type", frame.note_type)  # global items carry their own type
        note = Note(id=self.new_id(created), project=project.name, note_type=note_type, lang=lang, body=body,
                    tags=tags, created=created, updated=created, importance=importance_of(rng, note_type),
                    frame=frame.name, key=key, slots=slots)
        if frame.subject and rng.random() < 0.25:
            note.subject, note.predicate = frame.subject(slots)
        return note

    def older(self, frame: Frame, project: Project, key: tuple[str, ...], lang: str, created: datetime,
              slots: Slots) -> Note:
        """An older version of a key: the frame's own wording for it, else its templates with older values."""
        if frame.stale:
            return self.make(frame, project, key, lang, created, slots, frame.stale)
        return self.make(frame, project, key, lang, created, frame.draw(self.rng, project, key, created), frame.notes)

    def add_key(self, frame: Frame, project: Project, key: tuple[str, ...], budget: int) -> int:
        """The active note of a key and perhaps a stale sibling; returns how many notes were made."""
        rng = self.rng
        lang = rng.choices(list(LANG_WEIGHTS), weights=list(LANG_WEIGHTS.values()))[0]
        if frame.name == "global":
            lang = rng.choice(["en", "zh"])
        created = self.moment(OLDEST, NOW - timedelta(days=2))
        slots = frame.draw(rng, project, key, created)
        active = self.make(frame, project, key, lang, created, slots, frame.notes)
        if rng.random() < 0.3:  # edited later through memctl
            active.updated = self.moment(created, NOW - timedelta(days=1))
        if rng.random() < 0.03:  # a deliberate future expiry: not stale yet
            active.expires = (NOW + timedelta(days=rng.randint(20, 300))).date()
        self.notes.append(active)
        made = 1
        if budget < 2 or not frame.allow_stale:
            return made
        roll, reason = rng.random(), None
        for name, odds in STALE_ODDS:
            if roll < odds:
                reason = name
                break
            roll -= odds
        if reason is None:
            return made
        # The stale sibling says the same kind of thing with an older value, in the same
        # words, so a query for the active note matches it too.
        sibling_lang = lang if rng.random() < 0.8 or frame.name == "global" else rng.choice(["en", "zh"])
        if reason == "expired":
            old_created = self.moment(OLDEST, NOW - timedelta(days=40))
            sibling = self.older(frame, project, key, sibling_lang, old_created, slots)
            prefix = "临时：" if CJK_CHAR.search(sibling.body[:1]) else "Temporary: "
            sibling.body = prefix + sibling.body
            sibling.expires = (old_created + timedelta(days=rng.randint(14, 30))).date()
        else:
            old_created = self.moment(OLDEST - timedelta(days=300), created - timedelta(days=20))
            sibling = self.older(frame, project, key, sibling_lang, old_created, slots)
            if reason == "superseded":
                sibling.status, sibling.superseded_by, sibling.updated = "superseded", active.id, created
            else:
                sibling.status = "archived"
                sibling.updated = self.moment(old_created, NOW - timedelta(days=1))
        sibling.stale_reason = reason
        self.notes.append(sibling)
        return made + 1


def make_projects(rng: random.Random) -> list[Project]:
    projects = []
    for name, zh in PROJECTS:
        products = {c.name: rng.choice(c.products) for c in COMPONENTS}
        domain = rng.choice([f"{name}.example.com", f"{name.replace('-', '')}.io", f"{name}.corp.example.net"])
        projects.append(Project(name, zh, products, domain))
    return projects


def build_notes(rng: random.Random, projects: list[Project], total: int) -> list[Note]:
    builder = Builder(rng)
    global_project = Project("global", "全局", projects[0].products, "example.com")
    for key in GLOBAL_FRAME.keys(global_project):  # every global item once
        builder.add_key(GLOBAL_FRAME, global_project, key, budget=1)
    remaining = total - len(builder.notes)
    # Projects differ in size (±30 %), as real ones do.
    shares = [rng.uniform(0.7, 1.3) for _ in projects]
    quotas = [int(remaining * s / sum(shares)) for s in shares]
    quotas[-1] += remaining - sum(quotas)
    for project, quota in zip(projects, quotas, strict=True):
        pools = {frame.name: frame.keys(project) for frame in FRAMES}
        for pool in pools.values():
            rng.shuffle(pool)
        made = 0
        while made < quota:
            open_frames = [f for f in FRAMES if pools[f.name]]
            if not open_frames:
                break
            frame = rng.choices(open_frames, weights=[f.weight for f in open_frames])[0]
            made += builder.add_key(frame, project, pools[frame.name].pop(), quota - made)
    return builder.notes


# ---------------------------------------------------------------------------------------
# MEMORY.md and SCRATCHPAD.md
# ---------------------------------------------------------------------------------------


def memory_md(rng: random.Random, project: str) -> str:
    chinese = rng.random() < 0.5
    lines = [f"# {project}", ""]
    for section, (en_items, zh_items) in MEMORY_POOL.items():
        lines.append(f"## {ZH_HEADINGS[section] if chinese else section}")
        # The two lists are translations of each other: distinct items, each in one language.
        picks = rng.sample(range(len(en_items)), rng.randint(2, 4))
        days = sorted(NOW - timedelta(days=rng.randint(1, 300)) for _ in picks)
        for day, index in zip(days, picks, strict=True):
            item = zh_items[index] if (rng.random() < 0.7) == chinese else en_items[index]
            lines.append(f"- [{day.month:02d}-{day.day:02d}] {item}")
        lines.append("")
    return "\n".join(lines)


def scratchpad_md(rng: random.Random, project: str) -> str:
    chinese = rng.random() < 0.5
    job, service = rng.choice(JOBS), rng.choice(SERVICES)
    slots = {"job": job[0], "job_zh": job[2], "service": service[0], "service_zh": service[2]}

    def pick(section: str, count: int) -> list[str]:
        en_items, zh_items = SCRATCH_POOL[section]  # translations of each other, as in MEMORY_POOL
        return [fmt(zh_items[i] if (rng.random() < 0.75) == chinese else en_items[i], slots)
                for i in rng.sample(range(len(en_items)), count)]

    stamp_day = NOW - timedelta(days=rng.randint(1, 10))
    done_times = sorted(f"{rng.randint(9, 18):02d}:{rng.choice([0, 15, 30, 45]):02d}" for _ in range(2))
    lines = [f"# Scratchpad: {project}", "", "## Focus", *pick("Focus", 1), "", "## Open questions",
             *[f"- {item}" for item in pick("Open questions", 2)], "", "## Next steps",
             *[f"{i}. {item}" for i, item in enumerate(pick("Next steps", 3), start=1)], "", "## Done",
             *[f"- [x] [{stamp_day:%m-%d} {at}] {item}" for at, item in zip(done_times, pick("Done", 2), strict=True)],
             "", "## Notes", *[f"- {item}" for item in pick("Notes", 1)], ""]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------

WORD = re.compile(r"[a-z0-9]+")


def stem(word: str) -> str:
    """A crude stemmer, only to decide whether a query word 'occurs' in a note (class checks)."""
    for suffix in ("ing", "ed", "es", "s", "er"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > 3 else word


def term_present(term: str, text: str, stems: set[str]) -> bool:
    """Whether a query term occurs in a note: a Chinese term as a substring, a Latin one by its words."""
    if CJK_CHAR.search(term):
        return term.lower() in text
    words = WORD.findall(term.lower())
    return bool(words) and all(stem(w) in stems for w in words)


def note_view(note: Note) -> tuple[str, set[str]]:
    text = (note.body + " " + " ".join(note.tags)).lower()
    return text, {stem(w) for w in WORD.findall(text)}


def en_typo(rng: random.Random, query: str) -> str | None:
    """One slip of the fingers in the longest word: transposition, drop, double or neighbour key."""
    words = query.split()
    candidates = [i for i, w in enumerate(words) if w.isalpha() and len(w) >= 5]
    if not candidates:
        return None
    longest = max(len(words[i]) for i in candidates)
    index = rng.choice([i for i in candidates if len(words[i]) >= longest - 2])
    word = words[index]
    kind = rng.choice(["swap", "drop", "double", "neighbour"])
    at = rng.randint(1, len(word) - 2)
    if kind == "swap" and word[at] != word[at + 1]:
        typo = word[:at] + word[at + 1] + word[at] + word[at + 2:]
    elif kind == "drop":
        typo = word[:at] + word[at + 1:]
    elif kind == "double":
        typo = word[:at] + word[at] + word[at:]
    else:
        typo = word[:at] + rng.choice(KEYBOARD_NEIGHBOURS.get(word[at], "e")) + word[at + 1:]
    if typo == word:
        return None
    words[index] = typo
    return " ".join(words)


def zh_typo(rng: random.Random, query: str) -> str | None:
    """A wrong character from the input method; failing that, a word typed only in part."""
    slips = [(right, wrong) for right, wrong in ZH_TYPOS.items() if right in query]
    if slips:
        right, wrong = rng.choice(slips)
        return query.replace(right, wrong, 1)
    terms = query.split()
    long_terms = [t for t in terms if CJK_CHAR.search(t) and len(t) >= 3]
    if not long_terms:
        return None
    term = rng.choice(long_terms)
    return query.replace(term, term[:-1], 1)  # stopped typing one character early


def question_style(rng: random.Random, text: str) -> str:
    """As agents and people type them: sometimes capitalised with a question mark, often not."""
    roll = rng.random()
    if roll < 0.45:
        return capital(text) + "?"
    if roll < 0.7:
        return text + "?"
    return text


def make_query(rng: random.Random, note: Note, cls: str) -> str | None:
    """A query of this class for this note, or None when the note's templates cannot give one."""
    frame = FRAME_BY_NAME[note.frame]
    lang = note.lang
    text, stems = note_view(note)
    source = "keyword" if cls == "typo" else cls
    templates = list(frame.queries[source][lang])
    rng.shuffle(templates)
    for template in templates:
        query = tidy(fmt(template, note.slots)) if lang == "zh" else fmt(template, note.slots)
        if cls == "question":
            query = unspace_cjk(query) if lang == "zh" else question_style(rng, query)
            return query
        query = query.lower() if lang == "en" else re.sub(r"\s+", " ", query).strip()
        present = [term_present(term, text, stems) for term in query.split()]
        if source == "keyword" and not all(present):
            continue  # a keyword query holds only words of the note
        if source == "partial" and (all(present) or not any(present)):
            continue  # a partial query holds some words of the note, not all
        if cls == "typo":
            typo = en_typo(rng, query) if lang == "en" else zh_typo(rng, query)
            if typo is None:
                continue
            return typo
        return query
    return None


def make_queries(rng: random.Random, notes: list[Note], projects: list[Project],
                 seed: int) -> list[dict[str, object]]:
    """Queries per language and class, each from a different active note (its label)."""
    # Which keys also have a stale version: those queries can show a stale leak.
    stale_of: dict[tuple[str, str, tuple[str, ...]], list[str]] = {}
    for note in notes:
        if note.stale_reason:
            stale_of.setdefault((note.project, note.frame, note.key), []).append(note.stale_reason)
    queries: list[dict[str, object]] = []
    seen: set[tuple[str, str]] = set()
    for lang in ("en", "zh"):
        # Round-robin over frames so ports and hosts (the biggest frames) do not crowd out the rest.
        by_frame: dict[str, deque[Note]] = {}
        for note in notes:
            if note.lang == lang and note.stale_reason is None:
                by_frame.setdefault(note.frame, deque()).append(note)
        for pool in by_frame.values():
            rng.shuffle(pool)
        for cls in MAIN_CLASSES:
            wanted, made, misses = QUERY_COUNTS[cls], 0, 0
            order = [name for name in sorted(by_frame) if by_frame[name]]
            rng.shuffle(order)
            turn = 0
            while made < wanted and misses < 10 * len(order):
                pool = by_frame[order[turn % len(order)]]
                turn += 1
                if not pool:
                    misses += 1
                    continue
                note = pool[0]
                query = make_query(rng, note, cls)
                project = note.project if note.project != "global" else rng.choice(projects).name
                if query is None or (project, query) in seen:
                    pool.rotate(-1)  # this note cannot give this class (or the query exists); others may
                    misses += 1
                    continue
                pool.popleft()  # one query per note
                seen.add((project, query))
                made += 1
                queries.append({"id": f"{lang}-{cls}-{made:03d}", "lang": lang, "class": cls, "query": query,
                                "relevant": [note.id], "project": project, "frame": note.frame,
                                "stale_versions": stale_of.get((note.project, note.frame, note.key), [])})
            if made < wanted:
                raise SystemExit(f"only {made} {lang} {cls} queries could be made; enlarge the corpus")
    used = {query["relevant"][0] for query in queries}  # type: ignore[index]
    queries.extend(make_agent_queries(random.Random(f"agent-{seed}"), notes, projects, used, stale_of))
    used = {query["relevant"][0] for query in queries}  # type: ignore[index]
    queries.extend(make_pasted_queries(random.Random(f"pasted-{seed}"), notes, used, stale_of))
    return queries


# What an agent pastes when something fails: an error line holding the value a note records,
# glued to other parts by `@`, `:`, `/`, `?` as a tool prints it (a host inside a login, a
# port after an address, a dashboard link with its query string), never the note's words.
PASTED = {
    "host": ["{user}@{host}: Permission denied (publickey).",
             "ssh: connect to host {user}@{host}:22: Connection timed out"],
    "port": ["connect ECONNREFUSED {ip}:{port}", "dial tcp {ip}:{port}: connect: connection refused"],
    "dashboard": ["{url}?orgId=1&from=now-6h&to=now", "Failed to load {url}?orgId=1: 502 Bad Gateway"],
}


def pasted_error(rng: random.Random, note: Note) -> str:
    slots = {**note.slots, "user": rng.choice(["deploy", "ubuntu", "ci"]),
             "ip": f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"}
    return fmt(rng.choice(PASTED[note.frame]), slots)


def make_pasted_queries(rng: random.Random, notes: list[Note], used: set[str],
                        stale_of: dict[tuple[str, str, tuple[str, ...]], list[str]]) -> list[dict[str, object]]:
    """`pasted` errors, per language from active notes of the frames in PASTED no other
    query is about, in turn over those frames; asked in the note's own project (a global
    note has none of these frames)."""
    queries: list[dict[str, object]] = []
    for lang in ("en", "zh"):
        by_frame = {name: [note for note in notes if note.lang == lang and note.frame == name
                           and note.stale_reason is None and note.id not in used]
                    for name in sorted(PASTED)}
        for pool in by_frame.values():
            rng.shuffle(pool)
        order = sorted(by_frame)
        for made in range(1, QUERY_COUNTS["pasted"] + 1):
            pool = by_frame[order[(made - 1) % len(order)]]
            if not pool:
                raise SystemExit(f"only {made - 1} {lang} pasted queries could be made; enlarge the corpus")
            note = pool.pop()
            queries.append({"id": f"{lang}-pasted-{made:03d}", "lang": lang, "class": "pasted",
                            "query": pasted_error(rng, note), "relevant": [note.id],
                            "project": note.project, "frame": note.frame,
                            "stale_versions": stale_of.get((note.project, note.frame, note.key), [])})
    return queries


# What an agent adds around its question: where it works and what the answer is for. The
# words are ordinary (the project's name, `release`, `checklist`, `上线`, `清单`…) and occur
# in other notes, MEMORY.md and scratchpads of the store, as such context does in a real one.
AGENT_TASKS = [("release checklist", "上线清单"), ("incident report", "事故报告"), ("on-call handover", "值班交接"),
               ("migration plan", "迁移方案"), ("runbook", "运维手册"), ("deploy script", "部署脚本"),
               ("weekly status update", "周报")]
AGENT_BEFORE = {"en": ["In {project}, ", "For the {project} project: ", "Working on {project_words}. ",
                       "Quick question about {project}: ", "", ""],
                "zh": ["{project_zh}这边，", "在{project_zh}项目里，", "问一下{project_zh}：", "{project}项目：", "", ""]}
AGENT_INLINE = ["", "", " right now", " these days", " currently"]  # English, before the question mark
AGENT_AFTER = {"en": ["", "", " I need it for the {task}.", " (for the {task})", " I'm updating the {task}."],
               "zh": ["", "？", "，我在写{task_zh}", "？要写进{task_zh}", "，目前是怎样的？"]}
AGENT_TYPO_SHARE = 0.25  # relayed from a person as typed


def agent_question(rng: random.Random, note: Note, project: Project) -> str:
    """One of the note's questions inside the context an agent gives it (its project, its
    task), sometimes with one slip of the fingers from the person it relays."""
    frame = FRAME_BY_NAME[note.frame]
    lang = note.lang
    question = fmt(rng.choice(list(frame.queries["question"][lang])), note.slots).rstrip("?？")
    if rng.random() < AGENT_TYPO_SHARE:
        question = (en_typo(rng, question) if lang == "en" else zh_typo(rng, question)) or question
    task, task_zh = rng.choice(AGENT_TASKS)
    slots = {"project": project.name, "project_words": project.name.replace("-", " "), "project_zh": project.zh,
             "task": task, "task_zh": task_zh}
    before = fmt(rng.choice(AGENT_BEFORE[lang]), slots)
    after = fmt(rng.choice(AGENT_AFTER[lang]), slots)
    if lang == "zh":
        return unspace_cjk(tidy(before + question + after))
    if before.endswith(", ") or before.endswith(": "):
        question = question[0].lower() + question[1:]
    return question_style(rng, before + question + rng.choice(AGENT_INLINE)) + after


def make_agent_queries(rng: random.Random, notes: list[Note], projects: list[Project], used: set[str],
                       stale_of: dict[tuple[str, str, tuple[str, ...]], list[str]]) -> list[dict[str, object]]:
    """`agent` questions, per language from active notes no other query is about, spread over
    the frames as the other classes are."""
    queries: list[dict[str, object]] = []
    by_name = {project.name: project for project in projects}
    for lang in ("en", "zh"):
        by_frame: dict[str, list[Note]] = {}
        for note in notes:
            if note.lang == lang and note.stale_reason is None and note.id not in used:
                by_frame.setdefault(note.frame, []).append(note)
        order = sorted(by_frame)
        for pool in by_frame.values():
            rng.shuffle(pool)
        wanted = QUERY_COUNTS["agent"]
        for made in range(1, wanted + 1):
            pool = by_frame[order[(made - 1) % len(order)]] or max(by_frame.values(), key=len)
            if not pool:
                raise SystemExit(f"only {made - 1} {lang} agent queries could be made; enlarge the corpus")
            note = pool.pop()
            project = by_name.get(note.project) or rng.choice(projects)
            queries.append({"id": f"{lang}-agent-{made:03d}", "lang": lang, "class": "agent",
                            "query": agent_question(rng, note, project), "relevant": [note.id],
                            "project": project.name, "frame": note.frame,
                            "stale_versions": stale_of.get((note.project, note.frame, note.key), [])})
    return queries


# ---------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------


def write_file(path: Path, text: str, moment: datetime) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    # Pinned mtimes: memctl falls back to them for MEMORY.md and SCRATCHPAD.md times.
    os.utime(path, (moment.timestamp(), moment.timestamp()))


def generate(out: Path, seed: int = 7, notes_count: int = 3200) -> dict[str, object]:
    """Write OUT/store, OUT/queries.jsonl and OUT/meta.json; returns the meta data."""
    rng = random.Random(seed)
    store = out / "store"
    if store.exists() and any(store.iterdir()):
        raise SystemExit(f"{store} is not empty; remove it first")
    projects = make_projects(rng)
    notes = build_notes(rng, projects, notes_count)
    for note in notes:
        write_file(store / note.relpath(), note.render(), note.updated)
    for name in [p.name for p in projects] + ["global"]:
        write_file(store / name / "MEMORY.md", memory_md(rng, name), NOW - timedelta(days=1))
        write_file(store / name / "SCRATCHPAD.md", scratchpad_md(rng, name), NOW - timedelta(hours=3))
    queries = make_queries(rng, notes, projects, seed)
    with (out / "queries.jsonl").open("w", encoding="utf-8") as handle:
        for query in queries:
            handle.write(json.dumps(query, ensure_ascii=False) + "\n")
    counts: dict[str, int] = {}
    for note in notes:
        for label in (f"lang_{note.lang}", note.stale_reason or "active", f"frame_{note.frame}"):
            counts[label] = counts.get(label, 0) + 1
    meta = {"seed": seed, "notes": len(notes), "now": NOW_TEXT, "projects": len(projects) + 1,
            "queries": len(queries), "counts": dict(sorted(counts.items()))}
    (out / "meta.json").write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return meta


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "out" / "retrieval")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--notes", type=int, default=3200)
    args = parser.parse_args()
    meta = generate(args.out, args.seed, args.notes)
    sys.stderr.write(f"wrote {meta['notes']} notes and {meta['queries']} queries into {args.out}\n")


if __name__ == "__main__":
    main()
