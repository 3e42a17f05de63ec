# Bash builtins only.
read -r -d '' -a t
n=${t[0]} total=${t[1]}
mod=1000000007
ways[0]=1
for (( x = 1; x <= total; x++ )); do ways[x]=0; done
for (( i = 0; i < n; i++ )); do
    c=${t[2 + i]}
    for (( x = c; x <= total; x++ )); do
        ways[x]=$(( (ways[x] + ways[x - c]) % mod ))
    done
done
printf '%s\n' "${ways[total]}"
