FROM python:3.11-slim
WORKDIR /app
COPY requirements.lock pyproject.toml README.md ./
RUN pip install --no-cache-dir torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install --no-cache-dir -r requirements.lock
COPY streams streams
COPY agents agents
COPY topics topics
COPY sinks sinks
RUN pip install --no-cache-dir --no-deps .
EXPOSE 6066
CMD ["memstream", "worker"]
