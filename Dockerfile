# kb-mcp over Streamable HTTP in a container.
#
#   docker build -t kb-mcp .
#   docker run --rm -v kb-state:/state kb-mcp token add laptop --scope read --tokens /state/tokens.json
#   docker run -d --name kb -p 127.0.0.1:8765:8765 -v "$HOME/notes:/vault" -v kb-state:/state kb-mcp
#
# The vault is mounted read-write at /vault (proposals go to its inbox; applies
# change notes). Everything else kb-mcp keeps lives in the /state volume,
# outside the vault: the token file and the index. The server listens on all
# the container's interfaces (hence --allow-remote); publish the port on
# 127.0.0.1 and put a tunnel or a TLS proxy in front, as the README says.
FROM rust:1.95-slim-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked --bin kb-mcp --bin kb-index

FROM debian:bookworm-slim
RUN useradd --create-home --uid 10001 kb && mkdir /vault /state && chown kb:kb /vault /state
COPY --from=build /src/target/release/kb-mcp /src/target/release/kb-index /usr/local/bin/
USER kb
VOLUME ["/state"]
EXPOSE 8765
ENTRYPOINT ["kb-mcp"]
CMD ["--http", "0.0.0.0:8765", "--allow-remote", "--tokens", "/state/tokens.json", "--vault", "/vault", "--index-dir", "/state/index"]
