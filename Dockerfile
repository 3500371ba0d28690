# The harvest image: Python 3.11 + OpenJDK 17 + the harvest package (with PySpark 4.2.0) +
# the Spark connector jars fetched by Maven from infra/maven/pom.xml. docker-compose.yml
# runs the Spark worker, the producer (`harvest produce`) and the job (`harvest submit`)
# from it; the worker needs it because Spark executors run the join's Python code.
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless maven procps \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/harvest
COPY . /opt/harvest
# editable install: the package finds schemas/ and .cache/jars/ next to its sources
RUN pip install --no-cache-dir -e . \
    && mvn -q -B -f infra/maven/pom.xml -Pspark dependency:copy-dependencies \
        -DoutputDirectory=/opt/harvest/.cache/jars/spark -DincludeScope=runtime \
    && rm -rf /root/.m2

ENV PYSPARK_PYTHON=/usr/local/bin/python3 \
    PYSPARK_DRIVER_PYTHON=/usr/local/bin/python3 \
    HARVEST_LOG_FORMAT=json
CMD ["harvest", "--help"]
