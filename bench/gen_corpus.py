"""Generate a realistic memctl store for benchmarks: N notes, fixed seed.

English, Chinese and mixed notes (40 / 30 / 30 %) with front matter as memctl writes it,
across 20 projects plus `global`; each project also gets a MEMORY.md, a SCRATCHPAD.md and a
few episodes; 3 % of the notes are hand-dropped files without front matter, 3 % are archived,
7 % superseded, 5 % carry an `expires` date.

    python bench/gen_corpus.py OUT_DIR N [--seed 42]
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

PROJECTS = [
    "blog-backend", "shop-api", "mobile-app", "data-pipeline", "infra", "auth-service",
    "search-engine", "billing", "admin-portal", "ml-platform", "chat-bot", "docs-site",
    "payments", "crm", "analytics", "game-server", "iot-hub", "cli-tools", "website", "notify",
]
TYPES = ["fact"] * 30 + ["decision"] * 15 + ["preference"] * 10 + ["rule"] * 10 + \
    ["error"] * 12 + ["experience"] * 8 + ["skill"] * 7 + ["correction"] * 8
EN_NOUNS = (
    "PostgreSQL database connection pool timeout cache Redis queue worker deploy pipeline "
    "migration schema index query transaction replica backup token session login password "
    "certificate domain proxy gateway container image cluster node kubernetes docker nginx "
    "endpoint request response header cookie payload webhook scheduler cron script config "
    "environment variable port firewall latency throughput pagination sorting filter search "
    "tokenizer encoding charset timezone logging metrics alert dashboard trace span error "
    "exception retry backoff idempotency consistency lock deadlock thread memory leak heap "
    "garbage collector compiler bundle dependency version release branch merge conflict "
    "review test fixture mock coverage linter formatter typescript python rust golang java "
    "react component router state render hydration build artifact registry secret vault "
    "permission role policy audit invoice payment refund subscription webhook customer order "
    "inventory product catalog price discount coupon shipment notification email template"
).split()
EN_VERBS = ("uses prefers needs avoids requires breaks caches retries logs validates migrates "
            "deploys rotates signs compresses streams batches throttles").split()
EN_TEMPLATES = [
    "The {a} {v} the {b} when the {c} is under load.",
    "Always run the {a} {b} before you deploy the {c}.",
    "Never store the {a} in the {b}; use the {c} instead.",
    "We chose {A} over {B} for the {c} because of the {d}.",
    "The {a} timeout is {n} seconds; raising it hid a {b} {c} bug.",
    "Prefer {A} for the {b}, keep the {c} small.",
    "Lesson: the {a} {v} silently when the {b} has no {c}.",
    "Use {A} {n} with the {b} {c}; no ORM.",
    "The {a} {b} moved to {A} in release {n}.",
]
ZH_WORDS = (
    "数据库 连接池 缓存 登录 超时 部署 配置 测试 接口 服务器 性能 日志 权限 用户 索引 查询 事务 "
    "迁移 回滚 队列 消息 异步 并发 线程 内存 泄漏 监控 告警 证书 域名 负载均衡 容器 镜像 集群 节点 "
    "备份 恢复 加密 密钥 令牌 会话 前端 后端 组件 路由 状态 渲染 打包 依赖 版本 发布 分支 合并 "
    "冲突 代码审查 单元测试 集成测试 文档 规范 约定 偏好 决策 教训 错误 修复 重构 优化 延迟 "
    "吞吐量 分页 排序 过滤 搜索 分词 编码 字符集 时区 定时任务 脚本 命令行 参数 环境变量 配置文件 "
    "端口 防火墙 代理 网关 限流 熔断 重试 幂等 一致性 主从复制 读写分离 分库分表 慢查询 执行计划 "
    "订单 支付 退款 库存 商品 优惠券 物流 通知 邮件 模板 报表 权重 召回 排序模型 特征 训练 推理"
).split()
ZH_TEMPLATES = [
    "{a}的{b}需要先{c}，否则会{d}。",
    "以后都用{a}做{b}，不要直接{c}。",
    "记住：{a}超过{n}秒就会{b}，要加{c}。",
    "千万不要在{a}里保存{b}，改用{c}。",
    "我们决定{a}采用{b}方案，因为{c}更稳定。",
    "{a}出现{b}问题时，先检查{c}和{d}。",
    "偏好：{a}和{b}分开部署，{c}单独{d}。",
    "上线前必须完成{a}和{b}，并确认{c}正常。",
]
MIXED_TEMPLATES = [
    "{A}的{za}设置为 {n}，{zb}要配合 {b} 一起调。",
    "用 {A} 做{za}，{zb}超时设为 {n}s。",
    "{A}{za}在 {b} 环境下{zb}，记得看 {c} 日志。",
    "部署 {A} 之前先跑 {b} {c}，否则{za}会失败。",
    "The {a} 的{za} is handled by {A}; see {b} {c}.",
]
PROPER = ("PostgreSQL Redis Kafka Nginx Kysely Django FastAPI React Vue Docker Kubernetes "
          "Terraform Ansible Prometheus Grafana Sentry Stripe GitHub GitLab Elasticsearch "
          "MySQL SQLite RabbitMQ Celery Webpack Vite pnpm Poetry Rust Go").split()
TAGS = ("database postgres redis cache deploy ci security auth performance frontend backend "
        "testing infra api billing search 中文 monitoring docker k8s python typescript").split()
ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def note_id(rng: random.Random, moment: datetime) -> str:
    millis = int(moment.timestamp() * 1000)
    number = (millis << 30) | rng.getrandbits(30)
    return "".join(ALPHABET[(number >> (5 * i)) & 31] for i in reversed(range(16)))


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def sentence(rng: random.Random, language: str) -> str:
    def en() -> str:
        return rng.choice(EN_NOUNS)

    def zh() -> str:
        return rng.choice(ZH_WORDS)

    values = dict(a=en(), b=en(), c=en(), d=en(), v=rng.choice(EN_VERBS), A=rng.choice(PROPER),
                  B=rng.choice(PROPER), n=rng.randint(2, 500))
    if language == "en":
        return rng.choice(EN_TEMPLATES).format(**values)
    if language == "zh":
        return rng.choice(ZH_TEMPLATES).format(a=zh(), b=zh(), c=zh(), d=zh(), n=values["n"])
    return rng.choice(MIXED_TEMPLATES).format(za=zh(), zb=zh(), **values)


def body_text(rng: random.Random, language: str) -> str:
    count = rng.choice([1, 1, 2, 2, 3, 4, 6])
    return " ".join(sentence(rng, language) for _ in range(count))


def slug_of(text: str) -> str:
    words = "".join(ch.lower() if ch.isalnum() else "-" for ch in text[:60])
    return "-".join(part for part in words.split("-") if part)[:48]


def generate(out: Path, count: int, seed: int = 42) -> None:
    rng = random.Random(seed)
    now = datetime(2026, 11, 30, 9, 0, tzinfo=UTC)
    out.mkdir(parents=True, exist_ok=True)
    (out / "memctl.toml").write_text("# memctl settings (benchmark corpus)\n")
    (out / ".gitignore").write_text(".memctl/\n")
    ids: dict[str, list[str]] = {}
    for number in range(count):
        project = "global" if rng.random() < 0.05 else rng.choice(PROJECTS)
        language = rng.choices(["zh", "en", "mixed"], weights=[40, 30, 30])[0]
        note_type = rng.choice(TYPES)
        created = now - timedelta(seconds=rng.randint(0, 730 * 86400))
        updated = created + timedelta(seconds=rng.randint(0, max(1, int((now - created).total_seconds()))))
        new_id = note_id(rng, created)
        body = body_text(rng, language)
        slug = slug_of(body) or "note"
        roll = rng.random()
        if roll < 0.03:
            path = out / project / "notes" / f"hand-{number}.md"
            text = f"# {body[:40]}\n\n{body}\n"
        else:
            status = "active"
            folder = "notes"
            if roll < 0.06:
                status, folder = "archived", "archive"
            elif roll < 0.13 and ids.get(project):
                status = "superseded"
            tags = rng.sample(TAGS, rng.choice([0, 1, 2, 2, 3, 4]))
            lines = ["---", f"id: {new_id}", f"type: {note_type}", f"project: {project}",
                     f"importance: {min(10, max(1, int(rng.triangular(1, 10, 5))))}",
                     f"tags: [{', '.join(tags)}]"]
            if rng.random() < 0.2:
                lines += [f"subject: {project}", f"predicate: {rng.choice(EN_NOUNS)}"]
            lines += [f"created: {stamp(created)}", f"updated: {stamp(updated)}"]
            if rng.random() < 0.05:
                lines.append(f"expires: {(now + timedelta(days=rng.randint(-200, 400))).date()}")
            lines.append(f"status: {status}")
            if status == "superseded":
                lines.append(f"superseded_by: {rng.choice(ids[project])}")
            if note_type == "correction" and ids.get(project):
                lines.append(f"corrects: {rng.choice(ids[project])}")
            lines += ["source: cli", "---", body, ""]
            text = "\n".join(lines)
            path = out / project / folder / note_type / f"{slug}-{new_id}.md"
            ids.setdefault(project, []).append(new_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        mtime = updated.timestamp()
        os.utime(path, (mtime, mtime))
    for project in PROJECTS + ["global"]:
        folder = out / project
        folder.mkdir(exist_ok=True)
        sections = {
            "Constraints": [sentence(rng, "en"), sentence(rng, "zh")],
            "Decisions": [sentence(rng, "mixed") for _ in range(3)],
            "Progress": [sentence(rng, "zh")],
            "Lessons": [sentence(rng, "en"), sentence(rng, "mixed")],
        }
        memory = [f"# {project}: project memory", ""]
        for title, items in sections.items():
            memory += [f"## {title}", *[f"- [11-{rng.randint(1, 29):02d}] {item}" for item in items], ""]
        (folder / "MEMORY.md").write_text("\n".join(memory), encoding="utf-8")
        (folder / "SCRATCHPAD.md").write_text(
            f"# Scratchpad: {project}\n\n## Focus\n{sentence(rng, 'en')}\n\n## Next steps\n"
            f"- {sentence(rng, 'zh')}\n", encoding="utf-8")
        for number in range(max(1, count // 1000)):
            created = now - timedelta(days=rng.randint(0, 365))
            episode_id = note_id(rng, created)
            path = folder / "episodes" / created.strftime("%Y-%m") / \
                f"{created.date()}-task-{number}-{episode_id}.md"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                f"---\nid: {episode_id}\ntype: episode\nproject: {project}\n"
                f"created: {stamp(created)}\nupdated: {stamp(created)}\n---\n"
                f"# {sentence(rng, 'en')}\n\n## Steps\n- {sentence(rng, 'mixed')} → ok\n"
                f"- {sentence(rng, 'zh')} → ok\n\n## Outcome\n{sentence(rng, 'en')}\n",
                encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("count", type=int)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    generate(args.out, args.count, args.seed)
    sys.stderr.write(f"wrote {args.count} notes into {args.out}\n")


if __name__ == "__main__":
    main()
